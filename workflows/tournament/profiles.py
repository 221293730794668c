"""Tournament profiles, the final ``rank`` block and the dry-run plan.

A profile is ``(n, k, t, m, lambda, temperatures)``. Models accept any numbers so a bad value
reaches ``check()`` and is refused with a ``TournamentError`` that names the field, the rule and
the fix (a pydantic decoding failure inside Temporal only says "Failed decoding arguments").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workflows import phases as phase_names
from workflows.bounds import MAX_CALLS, MAX_LAMBDA, MAX_TEMPERATURE, Seed
from workflows.inputs import StrictModel
from workflows.tournament.errors import (
    BUDGET_PLANNED_CALLS_EXCEEDED,
    PROFILE_INVALID,
    RANK_K_INVALID,
    RANK_K_REQUIRED,
    RANK_MAX_CALLS_EXCEEDED,
    RANK_MAX_CALLS_REQUIRED,
    TournamentError,
)

__all__ = [
    "ADAPTIVE_SHARE",
    "ALL_PAIRS_FREE_LIMIT",
    "BUILTIN_PROFILES",
    "FINALIZE_TEMPERATURE",
    "PLAN_WARNING_CALLS",
    "PhaseCalls",
    "Profile",
    "RankBlock",
    "RankMode",
    "TournamentPlan",
    "adaptive_pairs_budget",
    "check_planned_calls",
    "elite_count",
    "final_judging_calls",
    "get_profile",
    "mutant_count",
    "plan",
    "profile_name",
    "rank_block",
]

# All-pairs final rankings up to this many pairs need no explicit rank.max_calls.
ALL_PAIRS_FREE_LIMIT = 100
PLAN_WARNING_CALLS = 100
# The finalizer polishes the winner, it does not rewrite it: sample close to the mode.
FINALIZE_TEMPERATURE = 0.2
MAX_N = 2_000
MAX_T = 100


class Profile(StrictModel):
    """Population size ``n``, judge degree ``k``, generations ``t``, final degree ``m``."""

    model_config = ConfigDict(
        frozen=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    # Upper bounds only (absurd sizes refused before anything is allocated); the lower bounds
    # and cross-field rules are check()'s, whose messages name the fix.
    n: int = Field(le=MAX_N)
    k: int = Field(le=MAX_N)
    t: int = Field(le=MAX_T)
    m: int = Field(le=MAX_N)
    lambda_: float = Field(default=0.01, alias="lambda", le=MAX_LAMBDA)
    generate_temperature: float = Field(default=0.8, le=MAX_TEMPERATURE)
    mutate_temperature: float = Field(default=0.6, le=MAX_TEMPERATURE)
    judge_temperature: float = Field(default=0.0, le=MAX_TEMPERATURE)
    finalize_temperature: float = Field(default=FINALIZE_TEMPERATURE, le=MAX_TEMPERATURE)

    def check(self) -> Profile:
        """Refuse a profile that cannot run; returns ``self`` so calls chain."""
        problems = _profile_problems(self)
        if problems:
            raise TournamentError(PROFILE_INVALID, "; ".join(problems))
        return self


def _profile_problems(p: Profile) -> list[str]:
    problems: list[str] = []
    if p.n < 2:
        problems.append(f"profile.n must be >= 2 (got {p.n}): use at least two candidates")
    if p.t < 0:
        problems.append(f"profile.t must be >= 0 (got {p.t}): use 0 for no mutation rounds")
    for name, value in (("k", p.k), ("m", p.m)):
        if value < 1:
            problems.append(f"profile.{name} must be >= 1 (got {value}): judge each candidate")
        elif value >= p.n:
            problems.append(
                f"profile.{name} must be < n (got {name}={value}, n={p.n}): lower {name} or raise n"
            )
        elif (p.n * value) % 2:
            problems.append(
                f"profile n*{name} must be even (n={p.n}, {name}={value}): make n or {name} even"
            )
    if not (math.isfinite(p.lambda_) and p.lambda_ > 0):
        problems.append(f"profile.lambda must be a finite number > 0 (got {p.lambda_}): try 0.01")
    for name in (
        "generate_temperature",
        "mutate_temperature",
        "judge_temperature",
        "finalize_temperature",
    ):
        value = getattr(p, name)
        if not (math.isfinite(value) and value >= 0):
            problems.append(f"profile.{name} must be a finite number >= 0 (got {value})")
    return problems


def _builtin(n: int, k: int, t: int, m: int) -> Profile:
    # lambda 0.01 (the default), generate and mutate temperature 1, judge 0.
    return Profile(n=n, k=k, t=t, m=m, generate_temperature=1.0, mutate_temperature=1.0)


BUILTIN_PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        "quick": _builtin(4, 2, 1, 2),
        "balanced": _builtin(8, 3, 2, 4),
        "paper": _builtin(20, 4, 3, 10),
    }
)


def get_profile(name: str) -> Profile:
    """A built-in profile by name."""
    try:
        return BUILTIN_PROFILES[name]
    except KeyError:
        names = ", ".join(BUILTIN_PROFILES)
        raise TournamentError(
            PROFILE_INVALID,
            f"profile {name!r} is not a built-in profile: use one of {names}, "
            "or give n, k, t and m",
        ) from None


def profile_name(profile: Profile) -> str | None:
    """The built-in name a profile equals, for ``summary.json``; None for a custom profile."""
    return next((name for name, p in BUILTIN_PROFILES.items() if p == profile), None)


RankMode = Literal["auto", "all-pairs", "k-regular"]


class RankBlock(StrictModel):
    """An explicit final ranking: ``rank: {mode, k, seed, max_calls}``."""

    model_config = ConfigDict(frozen=True)

    mode: RankMode = "k-regular"
    k: int | None = None
    seed: Seed | str | None = Field(default=None, description="replaces the run seed if set")
    max_calls: int | None = Field(default=None, le=MAX_CALLS)

    def resolved(self, n: int) -> RankBlock:
        """The concrete block over ``n`` candidates: ``auto`` picks all-pairs or k-regular."""
        if self.mode != "auto":
            return self
        return rank_block(n, "auto", k=self.k, seed=self.seed, max_calls=self.max_calls)

    def calls(self, n: int) -> int:
        """Judge calls of this block over ``n`` candidates; refuses a block that cannot run."""
        if self.mode == "auto":
            return self.resolved(n).calls(n)
        if self.mode == "all-pairs":
            calls = n * (n - 1) // 2
            if calls > ALL_PAIRS_FREE_LIMIT and (self.max_calls is None or self.max_calls < calls):
                got = "not set" if self.max_calls is None else f"{self.max_calls}"
                raise TournamentError(
                    RANK_MAX_CALLS_REQUIRED,
                    f"rank.max_calls must be >= {calls} for all-pairs over {n} candidates "
                    f"(more than {ALL_PAIRS_FREE_LIMIT} pairs; rank.max_calls is {got}): "
                    f"set rank.max_calls (ponder rank --rank-max-calls) to {calls} or use "
                    "mode k-regular",
                )
        else:
            if self.k is None:
                raise TournamentError(
                    RANK_K_REQUIRED,
                    "rank.k is required when rank.mode is k-regular: set rank.k "
                    f"(an integer 1..{n - 1} with n*k even) or use mode all-pairs",
                )
            if not 1 <= self.k < n or (n * self.k) % 2:
                raise TournamentError(
                    RANK_K_INVALID,
                    f"rank.k={self.k} cannot form a k-regular schedule over n={n} candidates: "
                    f"k must be in 1..{n - 1} and n*k even",
                )
            calls = n * self.k // 2
        if self.max_calls is not None and calls > self.max_calls:
            raise TournamentError(
                RANK_MAX_CALLS_EXCEEDED,
                f"rank block needs {calls} calls, over rank.max_calls={self.max_calls}: "
                "raise rank.max_calls or lower rank.k",
            )
        return calls


def rank_block(
    n: int,
    mode: RankMode = "auto",
    *,
    k: int | None = None,
    seed: int | str | None = None,
    max_calls: int | None = None,
) -> RankBlock:
    """The rank block that ranks ``n`` given candidates in ``mode``.

    ``auto`` judges every pair while they fit the cap (``max_calls``, else
    ``ALL_PAIRS_FREE_LIMIT`` pairs) and otherwise falls back to k-regular: ``k`` if given, else
    the largest degree whose ``n*k/2`` calls fit the cap.
    """
    if n < 2:
        raise TournamentError(
            PROFILE_INVALID,
            f"ranking needs at least two candidates to compare (got {n}): give two or more",
        )
    if mode != "auto":
        return RankBlock(mode=mode, k=k, seed=seed, max_calls=max_calls)
    cap = max_calls if max_calls is not None else ALL_PAIRS_FREE_LIMIT
    if k is None and n * (n - 1) // 2 <= cap:
        return RankBlock(mode="all-pairs", seed=seed, max_calls=max_calls)
    if k is None:
        fitting = [d for d in range(1, n) if (n * d) % 2 == 0 and n * d // 2 <= cap]
        if not fitting:
            least = n // 2 if n % 2 == 0 else n
            raise TournamentError(
                RANK_MAX_CALLS_EXCEEDED,
                f"ranking {n} candidates needs at least {least} judge calls, over the rank "
                f"call limit of {cap}: raise rank.max_calls (--rank-max-calls)",
            )
        k = fitting[-1]
    return RankBlock(mode="k-regular", k=k, seed=seed, max_calls=max_calls)


def elite_count(n: int) -> int:
    """Elites kept unchanged each generation: ``ceil(n/4)``."""
    return -(-n // 4)


def mutant_count(n: int) -> int:
    """Mutants made each generation: ``n - ceil(n/4)``."""
    return n - elite_count(n)


def final_judging_calls(profile: Profile, rank: RankBlock | None = None) -> int:
    """Calls of the final ranking: ``n*m/2``, or the rank block's count."""
    return rank.calls(profile.n) if rank is not None else profile.n * profile.m // 2


class PhaseCalls(BaseModel):
    phase: str
    calls: int


class TournamentPlan(BaseModel):
    """A dry run: what a tournament would cost, without making a call."""

    calls: int = Field(description="nominal calls: generation, judging, mutation, final ranking")
    calls_per_pair: int = Field(default=1, description="judge calls per pair: judges x orders")
    phases: list[PhaseCalls]
    finalizer_calls: int
    planned_calls: int = Field(description="calls + finalizer: what max_calls is checked against")
    retry_headroom: int = Field(description="extra judge calls if every one needs all retries")
    worst_case_calls: int
    sequential_rounds: int
    warning: str | None = None
    usd_per_call: float | None = None
    estimated_usd: float | None = None
    worst_case_usd: float | None = None


ADAPTIVE_SHARE = 0.3
"""An adaptive judging phase spends this share of the pairs its k-regular schedule would judge
(unless the caller sizes it: ``TournamentInput.adaptive_share``). ``benchmarks/ranking_accuracy``
(20 candidates, 200 seeds) backs it: adaptive with 30 calls names the best candidate 63.0% of
the time at judge accuracy 0.85 and 85.0% at 0.95, against 54.0% and 61.5% for 10-regular's
100 calls; at 0.75, 40.0% against 42.5%, within a standard error (3.5 points)."""


def adaptive_pairs_budget(regular: int, n: int, share: float) -> int:
    """The pairs an adaptive phase judges: ``share`` of the ``regular`` pairs, rounded up, and
    at least ``n`` (the opening's matching and about as many champion pairs after it: below
    that the phase is little more than one random round), never more than ``regular``."""
    wanted = math.ceil(share * regular - 1e-9)
    return min(regular, max(wanted, n))


def plan(
    profile: Profile,
    *,
    rank: RankBlock | None = None,
    finalizer: bool = False,
    invalid_json_retries: int = 1,
    usd_per_call: float | None = None,
    given: bool = False,
    calls_per_pair: int = 1,
    adaptive_share: float | None = None,
) -> TournamentPlan:
    """The dry-run plan of one tournament; refuses an invalid profile or rank block.

    ``given``: the initial population is supplied (the ``rank`` service), so no generation
    call is made for it. ``calls_per_pair``: judge calls per scheduled pair (judges times
    orders: 2 with ``judge_orders: both``), counted in every judging phase and its retries.
    ``adaptive_share``: the adaptive schedule's share (``adaptive_pairs_budget``) of each
    judging phase's pairs (the rank block's final phase is never adaptive); None: k-regular.
    """
    profile.check()
    if invalid_json_retries < 0:
        raise ValueError(f"invalid_json_retries must be >= 0 (got {invalid_json_retries})")
    if calls_per_pair < 1:
        raise ValueError(f"calls_per_pair must be >= 1 (got {calls_per_pair})")
    n, k, t = profile.n, profile.k, profile.t
    final_pairs, judging_pairs = final_judging_calls(profile, rank), n * k // 2
    if adaptive_share is not None:
        judging_pairs = adaptive_pairs_budget(judging_pairs, n, adaptive_share)
        if rank is None:
            final_pairs = adaptive_pairs_budget(final_pairs, n, adaptive_share)
    final = final_pairs * calls_per_pair
    judging = judging_pairs * calls_per_pair
    generated = 0 if given else n
    phases = [PhaseCalls(phase=phase_names.INITIAL_GENERATION, calls=generated)]
    for g in range(1, t + 1):
        phases.append(PhaseCalls(phase=phase_names.generation_judging(g), calls=judging))
        phases.append(PhaseCalls(phase=phase_names.generation_mutation(g), calls=mutant_count(n)))
    phases.append(PhaseCalls(phase=phase_names.FINAL_JUDGING, calls=final))
    finalizer_calls = 1 if finalizer else 0
    if finalizer:
        phases.append(PhaseCalls(phase=phase_names.FINALIZING, calls=1))
    calls = generated + t * (judging + mutant_count(n)) + final
    planned = calls + finalizer_calls
    headroom = (t * judging + final) * invalid_json_retries
    worst = planned + headroom
    warning = None
    if planned >= PLAN_WARNING_CALLS:
        warning = (
            f"this tournament makes {planned} model calls (up to {worst} with judge retries): "
            "check the budget, or pick a smaller profile"
        )
    return TournamentPlan(
        calls=calls,
        calls_per_pair=calls_per_pair,
        phases=phases,
        finalizer_calls=finalizer_calls,
        planned_calls=planned,
        retry_headroom=headroom,
        worst_case_calls=worst,
        # Initial generation and final judging, plus a judging and a mutation round per generation.
        sequential_rounds=2 + 2 * t,
        warning=warning,
        usd_per_call=usd_per_call,
        estimated_usd=None if usd_per_call is None else planned * usd_per_call,
        worst_case_usd=None if usd_per_call is None else worst * usd_per_call,
    )


def check_planned_calls(tournament_plan: TournamentPlan, max_calls: int | None) -> None:
    """Preflight: refuse a plan whose nominal calls (+ finalizer, not retries) exceed max_calls."""
    needed = tournament_plan.planned_calls
    if max_calls is not None and needed > max_calls:
        raise TournamentError(
            BUDGET_PLANNED_CALLS_EXCEEDED,
            f"the plan needs {needed} calls, over max_calls={max_calls}: "
            f"raise max_calls to at least {needed} or pick a smaller profile",
        )
