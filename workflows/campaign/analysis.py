"""A campaign's analysis as the report shows it and ``summary.json`` stores it: per-variant
summaries, paired comparisons and the decisions (``workflows.campaign.stats`` computes it).

Pure types, apart from the statistics: a re-rendered report reads a stored analysis back
without numpy and scipy.
"""

from __future__ import annotations

from pydantic import BaseModel

from workflows.campaign.records import Decision

__all__ = ["BOOTSTRAP_SEED", "Analysis", "Comparison", "VariantSummary"]

BOOTSTRAP_SEED = 20_240_601
"""The analysis seed of a campaign whose document gives none (``analysis_seed``)."""


class VariantSummary(BaseModel):
    variant: str
    cells: int
    scored: int
    failed: int
    cancelled: int = 0
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    mean_cost_usd: float
    total_cost_usd: float
    calls: int
    pareto: bool = False


class Comparison(BaseModel):
    variant: str
    comparator: str
    pairs: int
    mean_delta: float | None = None
    wins: int = 0
    losses: int = 0
    ties: int = 0
    win_rate: float | None = None
    p_value: float | None = None
    q_value: float | None = None
    cohens_d: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pr_positive: float | None = None
    pr_rope: float | None = None
    mde: float | None = None
    decision: Decision = "needs_more_data"
    reason: str = ""


class Analysis(BaseModel):
    comparator: str
    rope: float
    min_pairs: int
    variants: list[VariantSummary]
    comparisons: list[Comparison]
    decisions: dict[str, Decision]
    recommendation: str
    recommended_variant: str
