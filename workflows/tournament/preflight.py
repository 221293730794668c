"""Everything refused before a tournament makes its first call. Pure: no Temporal import."""

from __future__ import annotations

from dataclasses import dataclass, field

from workflows.families import model_family
from workflows.history_budget import (  # preflight refuses a plan past half of either limit
    HISTORY_BYTES_BUDGET,
    HISTORY_EVENTS_BUDGET,
    TEMPORAL_HISTORY_EVENTS,
)
from workflows.run_ids import RUN_ID
from workflows.tournament.errors import (
    PROFILE_INVALID,
    PROFILE_TOO_LARGE,
    RUN_ID_INVALID,
    TournamentError,
)
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

__all__ = [
    "HISTORY_BYTES_BUDGET",
    "HISTORY_EVENTS_BUDGET",
    "HistoryEstimate",
    "Preflight",
    "SelfPreferenceRisk",
    "check_history_size",
    "estimate_history",
    "preflight",
    "profile_of",
    "rank_profile",
    "self_preference_risks",
]

# Measured: a paper run (285 calls, judge concurrency 8) had 1,182 events, 4.1 per call. A call
# is 3 activity events; at concurrency 1 each answer also needs its own workflow task (3 more).
EVENTS_PER_CALL = 6
# Per phase: a fit (local-activity marker) and an artifact write, with their workflow tasks.
EVENTS_PER_PHASE = 12
# Payloads over the 16 KiB external-storage threshold leave history as a reference, so a call
# keeps at most one such payload each way; measured ~7 KB per call with 20 KB candidates.
BYTES_PER_CALL = 16 * 1024


@dataclass(frozen=True)
class SelfPreferenceRisk:
    """A judge of the same family as some candidates' generators, but not all of them."""

    judge: str
    family: str
    generators: tuple[str, ...]
    """The generator models (generate, mutate) of that family."""

    @property
    def message(self) -> str:
        return (
            f"judge {self.judge} is of the {self.family} family, like generator "
            f"{', '.join(self.generators)} but not the others: LLM judges tend to prefer their "
            "own family's answers; add judges of other families (--judges a,b,c) or judge with "
            "a model of none of the generators' families"
        )


def self_preference_risks(input: TournamentInput, profile: Profile) -> list[SelfPreferenceRisk]:
    """Judges that share a family with some, not all, of the models that write candidates.

    Given candidates (the rank service) have no known model, so nothing is flagged for them.
    """
    if input.candidates is not None:
        return []
    generators = [input.models.generate or input.model]
    if profile.t > 0:  # mutants are written by the mutator
        generators.append(input.models.mutate or input.model)
    families = {spec: model_family(spec) for spec in dict.fromkeys(generators)}
    if len(set(families.values())) < 2:
        return []
    risks = []
    for judge in input.judge_panel:
        family = model_family(judge)
        same = tuple(spec for spec, f in families.items() if f == family)
        if same:
            risks.append(SelfPreferenceRisk(judge, family, same))
    return risks


@dataclass(frozen=True)
class Preflight:
    profile: Profile
    profile_name: str | None
    tournament: TournamentPlan
    self_preference: tuple[SelfPreferenceRisk, ...] = field(default=())

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


def _check_task(input: TournamentInput) -> None:
    # Field bounds live in the input models (decoding refuses them with input.invalid);
    # "only whitespace" is a rule pydantic's constraints cannot say as clearly.
    if not input.task.strip():
        raise TournamentError(
            PROFILE_INVALID, "task must not be empty: give the question or problem to work on"
        )


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


@dataclass(frozen=True)
class HistoryEstimate:
    events: int
    """From the worst case: every judge call retried ``invalid_json_retries`` times."""
    bytes: int
    """From the planned calls, each at the external-storage threshold."""


def estimate_history(tournament: TournamentPlan) -> HistoryEstimate:
    events = tournament.worst_case_calls * EVENTS_PER_CALL
    events += (len(tournament.phases) + 1) * EVENTS_PER_PHASE
    return HistoryEstimate(events=events, bytes=tournament.planned_calls * BYTES_PER_CALL)


def check_history_size(tournament: TournamentPlan) -> None:
    """Refuse a run whose history would pass half of Temporal's limits (``profile.too_large``)."""
    estimate = estimate_history(tournament)
    over = []
    if estimate.events > HISTORY_EVENTS_BUDGET:
        over.append(
            f"about {estimate.events:,} history events, over {HISTORY_EVENTS_BUDGET:,} "
            f"(half of Temporal's {TEMPORAL_HISTORY_EVENTS:,}-event limit)"
        )
    if estimate.bytes > HISTORY_BYTES_BUDGET:
        over.append(
            f"about {estimate.bytes / 2**20:.0f} MiB of history, over "
            f"{HISTORY_BYTES_BUDGET / 2**20:.0f} MiB (half of Temporal's 50 MiB limit)"
        )
    if over:
        raise TournamentError(
            PROFILE_TOO_LARGE,
            f"this tournament plans {tournament.planned_calls:,} calls (up to "
            f"{tournament.worst_case_calls:,} with judge retries): {' and '.join(over)}: "
            "pick a smaller profile (lower n, k, m or t, or fewer invalid_json_retries) "
            "or split the work into several runs",
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
    if run_id is not None and not RUN_ID.fullmatch(run_id):
        raise TournamentError(
            RUN_ID_INVALID,
            f"run id {run_id!r} must match [A-Za-z0-9][A-Za-z0-9._-]* and be at most 128 "
            "characters: choose another",
        )
    _check_task(input)
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
        calls_per_pair=input.calls_per_pair,
        adaptive_share=input.adaptive_pairs_share,
    )
    check_planned_calls(tournament, input.budget.max_calls)
    check_history_size(tournament)
    risks = tuple(self_preference_risks(input, profile))
    return Preflight(profile, profile_name(profile), tournament, risks)
