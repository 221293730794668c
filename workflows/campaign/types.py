"""Inputs and results of the ``Campaign`` workflow and its activities, shared by both sides.

Pure (pydantic only). The workflow's own input is the ``ponder-campaign/1`` document itself
(``workflows/campaign/document.py``), so ``temporal workflow start --type Campaign --input
"$(cat campaign.json)"`` works with the same JSON the CLI reads (YAML converted to JSON).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from workflows.budget import BudgetLimits, BudgetSpent
from workflows.campaign.document import Route, Scorer
from workflows.campaign.progress import CampaignProgress, CampaignStatus
from workflows.campaign.records import Decision, JudgeMetadata, RunRecord

__all__ = [
    "CampaignArtifactsInput",
    "CampaignArtifactsResult",
    "CampaignEvent",
    "CampaignProgress",
    "CampaignResult",
    "CampaignStatus",
    "CellOutcome",
    "CheckRouteInput",
    "RouteCheck",
    "RouteIssue",
    "RoutedModel",
    "SettleCellInput",
]


class RoutedModel(BaseModel):
    variant: str
    model: str
    base_url: str | None = None


class CheckRouteInput(BaseModel):
    route: Route
    models: list[RoutedModel]
    offline: bool = Field(
        default=False, description="a wire replay that never reaches the network: no key needed"
    )


class RouteIssue(BaseModel):
    variant: str
    model: str
    reason: Literal[
        "no_explicit_base_url", "base_url_blocked", "base_url_not_allowed", "no_auth",
        "wrong_provider", "unknown_model",
    ]  # fmt: skip
    message: str


class RouteCheck(BaseModel):
    issues: list[RouteIssue]
    http_variants: list[str] = Field(description="variants whose models speak HTTP")


class SettleCellInput(BaseModel):
    """After a cell's child workflow ended: check its capture, read its spend, score it."""

    run_id: str
    kind: Literal["single", "tournament", "plan"]
    scorer: Scorer
    child_failed: bool = False
    http: bool = Field(default=False, description="the cell's models speak HTTP: check raw events")
    return_answer: bool = Field(default=False, description="judge scorers: the workflow judges")
    answer: str | None = Field(
        default=None, description="plan cells: the last step's output (a plan run keeps no file)"
    )


class CellOutcome(BaseModel):
    exists: bool
    completed: bool
    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    model: str = ""
    simulated: bool = False
    score: float | None = None
    score_error: str | None = None
    score_error_code: str | None = None
    """The judge call's error type when that call failed (``provider.replay_miss``, ...)."""
    integrity_issues: list[str] = []
    answer: str | None = None
    wall_ms: float = 0.0
    judge: JudgeMetadata | None = Field(default=None, description="set by the judge scorer")


class CampaignArtifactsInput(BaseModel):
    run_id: str
    chain: str | None = None
    """The writing workflow's ``first_execution_run_id`` (the run store's claim)."""
    document: dict[str, Any]
    fingerprint: str
    status: CampaignStatus
    records: list[RunRecord]
    planned_cells: int
    budget: BudgetLimits
    spent: BudgetSpent
    error: str | None = None
    started_at: str
    written_at: str
    progress: CampaignProgress | None = None
    """The progress query's answer as of this write: ``progress.json``, what ``ponder status``
    shows of the campaign once it has ended (None: a write scheduled before it was sent)."""


class CampaignArtifactsResult(BaseModel):
    run_dir: str
    decisions: dict[str, Decision]
    recommendation: str
    recommended_variant: str


class CampaignEvent(BaseModel):
    seq: int
    ts: str
    type: str
    data: dict[str, Any] = {}


class CampaignResult(BaseModel):
    run_id: str
    status: CampaignStatus
    fingerprint: str
    cells: int
    failed_cells: int
    decisions: dict[str, Decision]
    recommendation: str
    recommended_variant: str
    spent: BudgetSpent
    run_dir: str
