"""What a tournament will cost before it starts: the numbers ``ponder think --dry-run`` prints
and the MCP ``plan`` tool returns, computed once here from the workflow input.

Calls and rounds come from preflight (the workflow's own plan of phases); USD is rough, since no
token count is known before a call: a fixed per-call shape at the dearest model in use.
"""

from __future__ import annotations

from pydantic import BaseModel

from activities.model_types import Usage
from activities.pricing import PRICES_AS_OF, cost_usd
from workflows import phases
from workflows.tournament.adaptive import opening_sizes
from workflows.tournament.preflight import preflight
from workflows.tournament.types import TournamentInput

__all__ = ["ROUGH_CALL_USAGE", "PhaseEstimate", "TournamentEstimate", "estimate", "models_in_use"]

# A dry run cannot know token counts; this per-call shape gives a rough USD figure.
ROUGH_CALL_USAGE = Usage(input_tokens=2_000, output_tokens=1_000)


class PhaseEstimate(BaseModel):
    phase: str
    calls: int
    adaptive_rounds: list[int] = []  # judge calls per round of an adaptive judging phase


class TournamentEstimate(BaseModel):
    planned_calls: int
    worst_case_calls: int  # with every judge retry spent
    sequential_rounds: int
    calls_per_pair: int
    judges: int
    judge_orders: str
    phases: list[PhaseEstimate]
    models: list[str]
    estimated_usd: float | None  # None: a model in use has no price
    worst_case_usd: float | None
    unpriced: list[str]
    prices_as_of: str
    warnings: list[str]


def models_in_use(payload: TournamentInput) -> list[str]:
    models = payload.models
    in_use = [m or payload.model for m in (models.generate, models.mutate)]
    in_use += payload.judge_panel + ([models.finalize] if models.finalize else [])
    return list(dict.fromkeys(in_use))


def _adaptive_rounds(payload: TournamentInput, n: int, phase: str, calls: int) -> list[int]:
    """Judge calls per round of an adaptive judging phase (the rank block is not adaptive)."""
    if payload.schedule != "adaptive" or calls == 0:
        return []
    name, _ = phases.split(phase)
    if name == phases.FINAL_JUDGING and payload.rank is not None:
        return []
    if name not in (phases.GENERATION_JUDGING, phases.FINAL_JUDGING):
        return []
    # Rounds of pairs; each pair costs calls_per_pair calls (the phase's calls count them all).
    return opening_sizes(n, calls // payload.calls_per_pair, payload.concurrency.judge)


def estimate(payload: TournamentInput) -> TournamentEstimate:
    """The run's calls, rounds and rough USD; refuses what preflight refuses."""
    in_use = models_in_use(payload)
    usd_per_call = None
    if in_use and all(m in payload.prices for m in in_use):
        usd_per_call = max(cost_usd(payload.prices[m], ROUGH_CALL_USAGE) for m in in_use)
    checked = preflight(payload, usd_per_call=usd_per_call)
    plan = checked.tournament
    estimates = [
        PhaseEstimate(
            phase=p.phase,
            calls=p.calls,
            adaptive_rounds=_adaptive_rounds(payload, checked.profile.n, p.phase, p.calls),
        )
        for p in plan.phases
    ]
    # Each adaptive batch waits for the fit of the one before: one more sequential round each.
    sequential = plan.sequential_rounds + sum(max(len(p.adaptive_rounds) - 1, 0) for p in estimates)
    warnings = [plan.warning] if plan.warning else []
    return TournamentEstimate(
        planned_calls=plan.planned_calls,
        worst_case_calls=plan.worst_case_calls,
        sequential_rounds=sequential,
        calls_per_pair=plan.calls_per_pair,
        judges=len(payload.judge_panel),
        judge_orders=payload.judge_orders,
        phases=estimates,
        models=in_use,
        estimated_usd=plan.estimated_usd,
        worst_case_usd=plan.worst_case_usd,
        unpriced=sorted({m for m in in_use if m not in payload.prices}),
        prices_as_of=PRICES_AS_OF,
        warnings=warnings + [risk.message for risk in checked.self_preference],
    )
