"""Bradley-Terry as a local activity: its floats steer selection, so replay must not refit.

The fit itself is the pure ``workflows.tournament.bradley_terry`` module; this is the one
activity that imports from ``workflows/``, because the maths is shared but must run outside
the workflow sandbox (numpy) and be recorded in history.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel
from temporalio import activity

from workflows.tournament.bradley_terry import LeaderboardRow, Outcome, leaderboard

__all__ = ["FIT_LEADERBOARD", "FitInput", "fit_leaderboard"]

FIT_LEADERBOARD = "fit_leaderboard"


class FitOutcome(BaseModel):
    presented_a: str
    presented_b: str
    winner: Literal["A", "B", "tie"]


class FitInput(BaseModel):
    candidate_ids: list[str]
    outcomes: list[FitOutcome]
    lambda_: float = 0.01
    generations: dict[str, int] = {}


@activity.defn(name=FIT_LEADERBOARD)
async def fit_leaderboard(input: FitInput) -> list[LeaderboardRow]:
    # A few milliseconds even at n = 200, so it runs on the worker's event loop.
    return leaderboard(
        input.candidate_ids,
        [Outcome(o.presented_a, o.presented_b, o.winner) for o in input.outcomes],
        lambda_=input.lambda_,
        generations=input.generations,
    )
