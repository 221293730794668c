"""Everything refused before a tournament makes its first call. Pure: no Temporal import."""

from __future__ import annotations

import re
from dataclasses import dataclass

from workflows.run_ids import RUN_ID
from workflows.tournament.critique import MIN_CRITIQUE_CHARS
from workflows.tournament.errors import PROFILE_INVALID, RUN_ID_INVALID, TournamentError
from workflows.tournament.profiles import (
    Profile,
    TournamentPlan,
    check_planned_calls,
    get_profile,
    plan,
    profile_name,
)
from workflows.tournament.prompts import validate_output_caps, validate_overrides
from workflows.tournament.types import TournamentInput

__all__ = ["Preflight", "preflight", "profile_of", "rank_profile"]

GIVEN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Preflight:
    profile: Profile
    profile_name: str | None
    tournament: TournamentPlan

    @property
    def temperatures(self) -> dict[str, float]:
        """Prompt role -> temperature (the finalizer polishes at its own, low one)."""
        p = self.profile
        return {
            "generate": p.generate_temperature,
            "compare": p.judge_temperature,
            "mutate": p.mutate_temperature,
            "finalize": p.finalize_temperature,
        }


def profile_of(input: TournamentInput) -> Profile:
    if input.custom is not None:
        return input.custom.check()
    return get_profile(input.profile or "quick")


def _check_settings(input: TournamentInput) -> None:
    """Bounds of the input's plain fields, each refusal naming the field and the rule."""
    problems = []
    if not input.task.strip():
        problems.append("task must not be empty: give the question or problem to work on")
    for role, value in input.concurrency.model_dump().items():
        if value < 1:
            problems.append(f"concurrency.{role}={value} must be >= 1")
    if input.invalid_json_retries < 0:
        problems.append(f"invalid_json_retries={input.invalid_json_retries} must be >= 0")
    if input.critique_chars < MIN_CRITIQUE_CHARS:
        problems.append(f"critique_chars={input.critique_chars} must be >= {MIN_CRITIQUE_CHARS}")
    for given in input.candidates or []:
        if not GIVEN_ID.match(given.id):
            problems.append(
                f"candidate id {given.id!r} must match [A-Za-z0-9][A-Za-z0-9._-]* "
                "(at most 64 characters)"
            )
    if problems:
        raise TournamentError(PROFILE_INVALID, "; ".join(problems))


def _check_given(input: TournamentInput, profile: Profile) -> None:
    ids = [c.id for c in input.candidates or []]
    duplicates = sorted({cid for cid in ids if ids.count(cid) > 1})
    if duplicates:
        raise TournamentError(
            PROFILE_INVALID,
            f"candidate ids must be unique; {', '.join(duplicates)} appear more than once: "
            "rename them",
        )
    if profile.n != len(ids) or profile.t != 0:
        raise TournamentError(
            PROFILE_INVALID,
            f"ranking {len(ids)} given candidates needs a profile with n={len(ids)} and t=0 "
            f"(got n={profile.n}, t={profile.t})",
        )


def rank_profile(count: int) -> Profile:
    """The smallest valid profile that ranks ``count`` given candidates (``t = 0``)."""
    degree = 1 if count % 2 == 0 else 2
    return Profile(n=count, k=min(degree, count - 1), t=0, m=min(degree, count - 1))


def preflight(
    input: TournamentInput, run_id: str | None = None, *, usd_per_call: float | None = None
) -> Preflight:
    """The profile and dry-run plan of ``input``, or the TournamentError that refuses it."""
    run_id = run_id or input.run_id
    if run_id is not None and not RUN_ID.match(run_id):
        raise TournamentError(
            RUN_ID_INVALID,
            f"run id {run_id!r} must match [A-Za-z0-9][A-Za-z0-9._-]* and be at most 128 "
            "characters: choose another",
        )
    _check_settings(input)
    profile = profile_of(input)
    if input.candidates is not None:
        _check_given(input, profile)
    validate_overrides(input.prompts)
    validate_output_caps(input.output_token_caps)
    tournament = plan(
        profile,
        rank=input.rank,
        finalizer=bool(input.models.finalize),
        invalid_json_retries=input.invalid_json_retries,
        usd_per_call=usd_per_call,
        given=input.candidates is not None,
    )
    check_planned_calls(tournament, input.budget.max_calls)
    return Preflight(profile, profile_name(profile), tournament)
