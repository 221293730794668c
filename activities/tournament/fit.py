"""Numeric fits as local activities: their floats steer what happens next, so a replay must
read them from history, never recompute them (another machine's libm could differ).

The maths is the pure ``workflows.tournament`` modules (``bradley_terry``, ``adaptive``);
activities import pure cores from ``workflows/``, never workflow definitions (import-linter).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from temporalio import activity

from workflows.tournament import adaptive
from workflows.tournament.activity_contracts import (
    ADAPTIVE_BATCH,
    BOOTSTRAP_LEADERBOARD,
    FIT_LEADERBOARD,
    AdaptiveBatchInput,
    BootstrapInput,
    FitInput,
)
from workflows.tournament.bootstrap import bootstrap
from workflows.tournament.bradley_terry import LeaderboardRow, Outcome, leaderboard
from workflows.tournament.schedule import ScheduledPair
from workflows.tournament.style_control import LengthModel, confidence_weight, controlled_fit
from workflows.tournament.types import LengthControl, ScoreIntervals

__all__ = [
    "ADAPTIVE_BATCH",
    "BOOTSTRAP_LEADERBOARD",
    "FIT_LEADERBOARD",
    "AdaptiveBatchInput",
    "BootstrapInput",
    "FitInput",
    "adaptive_batch",
    "bootstrap_leaderboard",
    "fit_leaderboard",
]


def _weights(input: FitInput | BootstrapInput) -> list[float] | None:
    if not input.weight_by_confidence:
        return None
    return [confidence_weight(o.confidence) for o in input.outcomes]


def _scores(
    ids: list[str],
    outcomes: list[Outcome],
    lambda_: float,
    weights: list[float] | None,
    lengths: dict[str, int] | None,
    model: LengthModel,
) -> dict[str, float] | None:
    """The controlled fit's scores, or None for the plain leaderboard fit."""
    if weights is None and lengths is None:
        return None
    fitted = controlled_fit(
        ids, outcomes, weights=weights, lengths=lengths, lambda_=lambda_, model=model
    )
    return fitted.scores


def _leaderboard(input: FitInput) -> list[LeaderboardRow]:
    outcomes = [Outcome(o.presented_a, o.presented_b, o.winner) for o in input.outcomes]
    return leaderboard(
        input.candidate_ids,
        outcomes,
        lambda_=input.lambda_,
        generations=input.generations,
        scores=_scores(
            input.candidate_ids,
            outcomes,
            input.lambda_,
            _weights(input),
            input.lengths,
            input.length_model,
        ),
    )


@activity.defn(name=FIT_LEADERBOARD)
async def fit_leaderboard(input: FitInput) -> list[LeaderboardRow]:
    # CPU work runs in a thread, so other activities' heartbeats never wait for a fit.
    return await asyncio.to_thread(_leaderboard, input)


@activity.defn(name=ADAPTIVE_BATCH)
async def adaptive_batch(input: AdaptiveBatchInput) -> list[ScheduledPair]:
    """The next batch of the adaptive schedule (a posterior fit and its draws)."""
    chooser = adaptive.champion_batch if input.rule == "champion" else adaptive.next_batch
    return await asyncio.to_thread(
        chooser,
        input.candidate_ids,
        [Outcome(o.presented_a, o.presented_b, o.winner) for o in input.outcomes],
        rng=adaptive.round_rng(input.seed, input.phase, input.round_no),
        size=input.size,
    )


BOOTSTRAP_LANES = 2
"""Chunks of a bootstrap's resamples refitted side by side: the bootstrap is most of a run's
last stretch, with the worker otherwise idle (the paper profile's 1,000 refits, the same bits
either way: 73 ms in one thread, 59 ms in two; 106 and 59 ms before its sums were segment sums)."""
_refits = ThreadPoolExecutor(max_workers=BOOTSTRAP_LANES, thread_name_prefix="ponder-bootstrap")


@activity.defn(name=BOOTSTRAP_LEADERBOARD)
async def bootstrap_leaderboard(input: BootstrapInput) -> ScoreIntervals:
    """The final scores' 95% intervals and top shares (``workflows/tournament/bootstrap.py``)."""
    result = await asyncio.to_thread(
        bootstrap,
        input.candidate_ids,
        [Outcome(o.presented_a, o.presented_b, o.winner) for o in input.outcomes],
        lambda_=input.lambda_,
        resamples=input.resamples,
        seed=input.seed,
        lanes=BOOTSTRAP_LANES,
        map_chunks=_refits.map,
        weights=_weights(input),
        lengths=input.lengths,
        length_model=input.length_model,
        intervals=input.intervals,
    )
    length = result.length
    return ScoreIntervals(
        resamples=result.resamples,
        requested=result.requested,
        seed=result.seed,
        low=result.low,
        high=result.high,
        top_share=result.top_share,
        method=result.method,
        length_control=None
        if length is None
        else LengthControl(
            coefficient=length.coefficient,
            low=length.low,
            high=length.high,
            standard_error=length.standard_error,
            comparisons=length.comparisons,
            differing=length.differing,
            significant=length.significant,
            model=length.model,
            identified=length.identified,
        ),
    )
