"""The tournament's numeric steps, run as local activities from workflow code.

Bradley-Terry fits and the adaptive schedule's Thompson draws produce floats that steer later
decisions, so they run in a local activity whose result is recorded in history: a replay on
another machine cannot diverge.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Literal

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows.tournament.activity_contracts import (
        ADAPTIVE_BATCH,
        BOOTSTRAP_LEADERBOARD,
        FIT_LEADERBOARD,
        AdaptiveBatchInput,
        BootstrapInput,
        FitInput,
        FitOutcome,
    )
    from workflows.tournament.bradley_terry import LeaderboardRow
    from workflows.tournament.schedule import ScheduledPair
    from workflows.tournament.types import ComparisonRow, ScoreIntervals

__all__ = [
    "FIT_RETRY_POLICY",
    "adaptive_pairs",
    "bootstrap_intervals",
    "fit_leaderboard",
    "row_confidence",
]

FIT_RETRY_POLICY = RetryPolicy(maximum_attempts=3)
FIT_TIMEOUT = timedelta(seconds=60)


async def fit_leaderboard(
    population: list[str],
    rows: Sequence[ComparisonRow],
    *,
    lambda_: float,
    generations: dict[str, int],
    lengths: dict[str, int] | None = None,
    length_model: Literal["additive", "mixture"] = "additive",
    weigh: bool = False,
) -> list[LeaderboardRow]:
    """The regularised Bradley-Terry leaderboard of ``population`` from judged ``rows``; with
    ``lengths``, controlled for length; ``weigh``: each verdict weighed by its confidence."""
    return await workflow.execute_local_activity(
        FIT_LEADERBOARD,
        FitInput(
            candidate_ids=population,
            outcomes=[_outcome(r, weigh) for r in rows],
            lambda_=lambda_,
            generations=generations,
            weight_by_confidence=weigh,
            lengths=lengths,
            length_model=length_model,
        ),
        result_type=list[LeaderboardRow],
        start_to_close_timeout=FIT_TIMEOUT,
        retry_policy=FIT_RETRY_POLICY,
    )


async def adaptive_pairs(
    population: list[str],
    rows: Sequence[ComparisonRow],
    *,
    seed: int,
    phase: str,
    round_no: int,
    size: int,
    rule: Literal["thompson", "champion"],
) -> list[ScheduledPair]:
    """The next adaptive batch: up to ``size`` pairs drawn from the fit of ``rows`` so far."""
    return await workflow.execute_local_activity(
        ADAPTIVE_BATCH,
        AdaptiveBatchInput(
            candidate_ids=population,
            outcomes=[_outcome(r) for r in rows],
            seed=seed,
            phase=phase,
            round_no=round_no,
            size=size,
            rule=rule,
        ),
        result_type=list[ScheduledPair],
        start_to_close_timeout=FIT_TIMEOUT,
        retry_policy=FIT_RETRY_POLICY,
    )


async def bootstrap_intervals(
    population: list[str],
    rows: Sequence[ComparisonRow],
    *,
    lambda_: float,
    resamples: int,
    seed: int,
    lengths: dict[str, int] | None = None,
    length_model: Literal["additive", "mixture"] = "additive",
    weigh: bool = False,
    intervals: Literal["percentile", "likelihood"] = "percentile",
) -> ScoreIntervals:
    """95% intervals of the scores fitted from ``rows`` (the final ranking), fitted as
    ``fit_leaderboard`` fits them (``lengths``, ``weigh``), made as ``intervals`` says, and the
    bootstrap's top shares."""
    return await workflow.execute_local_activity(
        BOOTSTRAP_LEADERBOARD,
        BootstrapInput(
            candidate_ids=population,
            outcomes=[_outcome(r, weigh) for r in rows],
            lambda_=lambda_,
            resamples=resamples,
            seed=seed,
            weight_by_confidence=weigh,
            lengths=lengths,
            length_model=length_model,
            intervals=intervals,
        ),
        result_type=ScoreIntervals,
        start_to_close_timeout=FIT_TIMEOUT,
        retry_policy=FIT_RETRY_POLICY,
    )


def row_confidence(row: ComparisonRow) -> float | None:
    """A comparison's confidence: its judge's, or, for a pair several calls decided (both
    orders, a panel), the mean of the calls' confidences (None where none gave one)."""
    if row.confidence is not None:
        return row.confidence
    given = [v.confidence for v in row.verdicts or [] if v.confidence is not None]
    return sum(given) / len(given) if given else None


def _outcome(row: ComparisonRow, weigh: bool = False) -> FitOutcome:
    return FitOutcome(
        presented_a=row.presented_a,
        presented_b=row.presented_b,
        winner=row.winner,
        confidence=row_confidence(row) if weigh else None,
    )
