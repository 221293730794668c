"""What the tournament workflow and its activities agree on: the registered names and the input
models of the numeric fits (``activities.tournament.fit``) and the artifact writer
(``activities.tournament.artifacts``).

The workflow schedules these by name and never imports the activity modules (they load the
report's jinja2 and the run store's file I/O). Names and field names are in saved histories:
never rename one, and add fields only with defaults.

Pure: pydantic and the standard library only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

__all__ = [
    "ADAPTIVE_BATCH",
    "BOOTSTRAP_LEADERBOARD",
    "FIT_LEADERBOARD",
    "WRITE_TOURNAMENT_ARTIFACTS",
    "AdaptiveBatchInput",
    "BootstrapInput",
    "FitInput",
    "FitOutcome",
]

FIT_LEADERBOARD = "fit_leaderboard"
"""``FitInput`` in, the leaderboard's rows out (a local activity: its floats steer the run)."""
ADAPTIVE_BATCH = "adaptive_batch"
"""``AdaptiveBatchInput`` in, the next scheduled pairs out (a local activity)."""
BOOTSTRAP_LEADERBOARD = "bootstrap_leaderboard"
"""``BootstrapInput`` in, the score intervals out (a local activity)."""
WRITE_TOURNAMENT_ARTIFACTS = "write_tournament_artifacts"
"""A ``TournamentSnapshot`` in: the run directory's files, and report.html when the run ends."""


class FitOutcome(BaseModel):
    presented_a: str
    presented_b: str
    winner: Literal["A", "B", "tie"]
    confidence: float | None = None
    """The judge's confidence, sent only to weigh the verdict (``weight_by_confidence``)."""


class FitInput(BaseModel):
    candidate_ids: list[str]
    outcomes: list[FitOutcome]
    lambda_: float = 0.01
    generations: dict[str, int] = {}
    weight_by_confidence: bool = False
    """Weigh each outcome by ``style_control.confidence_weight`` of its confidence."""
    lengths: dict[str, int] | None = None
    """Candidate id -> its text's length: fit with the length term (``style_control``)."""
    length_model: Literal["additive", "mixture"] = "additive"
    """Which length term (``style_control.LengthModel``): the mixture since
    ``tournament-2026-12h``, the additive log-odds term before."""


class AdaptiveBatchInput(BaseModel):
    candidate_ids: list[str]
    outcomes: list[FitOutcome]
    seed: int
    phase: str
    round_no: int
    size: int
    rule: Literal["thompson", "champion"] = "thompson"
    """champion: the sparse opening's pair rule; thompson: runs started before it."""


class BootstrapInput(BaseModel):
    candidate_ids: list[str]
    outcomes: list[FitOutcome]
    lambda_: float = 0.01
    resamples: int
    seed: int
    weight_by_confidence: bool = False
    lengths: dict[str, int] | None = None
    length_model: Literal["additive", "mixture"] = "additive"
    intervals: Literal["percentile", "likelihood"] = "percentile"
    """How the 95% intervals are made (``bootstrap.IntervalMethod``)."""
