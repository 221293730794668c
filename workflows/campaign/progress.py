"""A campaign's progress: what its status query answers and ``progress.json`` keeps.

A module of its own, apart from ``workflows.campaign.types`` (which loads the campaign document
and the plan language behind it, about a quarter second): ``ponder status`` of a campaign reads
only this.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from workflows.budget import BudgetLimits, BudgetSpent

__all__ = ["CampaignProgress", "CampaignStatus"]

CampaignStatus = Literal["running", "awaiting_budget", "completed", "failed", "cancelled"]


class CampaignProgress(BaseModel):
    run_id: str
    status: CampaignStatus
    cells_total: int
    cells_done: int
    cells_running: int
    cells_failed: int
    budget: BudgetLimits
    spent: BudgetSpent
    reserved_calls: int = 0
    blocking_limit: str | None = None
    awaiting_cell_calls: int | None = Field(
        default=None, description="awaiting budget: the worst-case calls of the next cell"
    )
    leader: str | None = Field(default=None, description="variant with the best mean so far")
    leader_mean: float | None = None
    fingerprint: str | None = None
    error: str | None = None
    refused: list[str] = []
