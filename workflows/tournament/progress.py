"""A tournament's progress (the ``progress`` query's answer) and its leaderboard rows.

Their own module, apart from ``types``: ``ponder status`` of an ended run prints them from the
run store, and loading every tournament type for that cost about 40 ms of its 0.3 s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from workflows.budget import BudgetLimits, BudgetSpent

__all__ = ["ENDED", "Progress", "ScoreRow", "Status"]

Status = Literal[
    "running", "awaiting_budget", "waiting_provider", "completed", "failed", "cancelled"
]
ENDED: frozenset[Status] = frozenset({"completed", "failed", "cancelled"})
"""Statuses after which a run writes no more and its progress no longer changes."""


class ScoreRow(BaseModel):
    phase: str
    generation: int | None
    candidate_id: str
    score: float
    rank: int
    tie_group: int
    wins: int
    losses: int
    ties: int
    comparisons: int


class Progress(BaseModel):
    run_id: str
    status: Status
    phase: str
    generation: int
    calls_planned: int
    budget: BudgetLimits
    spent: BudgetSpent
    leaderboard: list[ScoreRow] = Field(default=[], description="top 5 of the latest fit")
    blocking_limit: str | None = None
    error: str | None = None
    in_flight: int = Field(default=0, description="calls dispatched and not yet answered")
    refused: list[str] = Field(default=[], description="refused control signals, newest last")
    waiting_until: str | None = Field(
        default=None, description="waiting_provider: when a provider said to come back (UTC)"
    )
    waiting_code: str | None = Field(
        default=None,
        description="waiting_provider: why: provider.retry_later (the provider asked for a "
        "pause) or provider.session_gone (no MCP session is connected to answer mcp: calls)",
    )
    usd_known: bool = Field(default=True, description="False once a call had no known price")
