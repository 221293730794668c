"""A campaign's artifacts: ``records.jsonl``, ``summary.json``, ``report.md``, ``report.html``.

The report is a pure function of the records and the design (no clock, no host): the same
records give the same report bytes, so ``ponder campaign report ID`` can re-render it from
``records.jsonl`` and a replayed campaign can be compared byte for byte. Timestamps live only in
``summary.json``. HTML comes from ``templates/campaign.html`` on the shared base layout, and its
plots are inline SVG (no network assets).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from temporalio import activity

from activities.heartbeats import in_thread
from activities.reports import render_page
from activities.run_store import REFUSED, RunStore, check_writer, refusal
from workflows.campaign.records import RunRecord, failed, was_cancelled
from workflows.campaign.stats import BOOTSTRAP_SEED, Analysis, analyse
from workflows.campaign.types import CampaignArtifactsInput, CampaignArtifactsResult

__all__ = [
    "WRITE_CAMPAIGN_ARTIFACTS",
    "CampaignArtifactActivities",
    "ReportDesign",
    "render_report",
]

WRITE_CAMPAIGN_ARTIFACTS = "write_campaign_artifacts"
PLOT_W, PLOT_H, PAD = 520, 300, 48

_MD = Environment(
    loader=PackageLoader("activities", "templates"),
    autoescape=False,  # markdown, not HTML
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


@dataclass(frozen=True)
class ReportDesign:
    campaign_id: str
    run_id: str
    variants: list[str]
    comparator: str
    rope: float
    min_pairs: int
    split: str
    fingerprint: str
    preregistration_hash: str | None
    commit_sha: str | None
    status: str
    planned_cells: int
    analysis_seed: int = BOOTSTRAP_SEED

    @classmethod
    def of(cls, input: CampaignArtifactsInput) -> ReportDesign:
        return cls.from_document(
            input.run_id,
            input.document,
            fingerprint=input.fingerprint,
            status=input.status,
            planned_cells=input.planned_cells,
        )

    @classmethod
    def from_document(
        cls,
        run_id: str,
        doc: dict[str, Any],
        *,
        fingerprint: str,
        status: str,
        planned_cells: int,
    ) -> ReportDesign:
        """From the campaign document as JSON (``campaign.json`` in the run directory)."""
        variants = [v["id"] for v in doc["variants"]]
        seed = doc.get("analysis_seed")
        return cls(
            campaign_id=doc["campaign_id"],
            run_id=run_id,
            variants=variants,
            comparator=doc.get("comparator") or variants[0],
            rope=float(doc.get("rope", 0.02)),
            min_pairs=int(doc.get("min_pairs", 20)),
            split=doc.get("split", "holdout"),
            fingerprint=fingerprint,
            preregistration_hash=doc.get("preregistration_hash"),
            commit_sha=doc.get("commit_sha"),
            status=status,
            planned_cells=planned_cells,
            analysis_seed=BOOTSTRAP_SEED if seed is None else int(seed),
        )


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def _pareto_points(analysis: Analysis) -> list[dict[str, Any]]:
    """Variants placed on the cost (x) vs mean score (y) plot, in SVG coordinates."""
    rows = [s for s in analysis.variants if s.mean is not None]
    if not rows:
        return []
    costs = [s.mean_cost_usd for s in rows]
    means = [s.mean for s in rows if s.mean is not None]
    c_lo, c_hi = min(costs), max(costs)
    m_lo, m_hi = min(means), max(means)
    points = []
    for s in rows:
        assert s.mean is not None
        x = PAD + (s.mean_cost_usd - c_lo) / ((c_hi - c_lo) or 1.0) * (PLOT_W - 2 * PAD)
        y = PLOT_H - PAD - (s.mean - m_lo) / ((m_hi - m_lo) or 1.0) * (PLOT_H - 2 * PAD)
        points.append({"variant": s.variant, "x": f"{x:.1f}", "y": f"{y:.1f}", "pareto": s.pareto})
    return points


def _context(design: ReportDesign, analysis: Analysis, records: Sequence[RunRecord]) -> dict:
    unscored = [r for r in records if r.failure_class is not None]  # failed or cancelled
    return {
        "design": design,
        "analysis": analysis,
        "failed": unscored,
        "records": records,
        "fmt": _fmt,
        "signed": _signed,
        "points": _pareto_points(analysis),
        "plot": {"w": PLOT_W, "h": PLOT_H, "pad": PAD},
    }


def render_report(
    design: ReportDesign, records: Sequence[RunRecord]
) -> tuple[Analysis, dict[str, str]]:
    """The analysis and the report files (``records.jsonl``, ``report.md``, ``report.html``)."""
    records = sorted(records, key=lambda r: (design.variants.index(r.variant), r.scenario, r.seed))
    analysis = analyse(
        records,
        variants=design.variants,
        comparator=design.comparator,
        rope=design.rope,
        min_pairs=design.min_pairs,
        seed=design.analysis_seed,
    )
    context = _context(design, analysis, records)
    simulated = bool(records) and all(r.simulated for r in records)
    facts = [
        ("campaign", design.campaign_id),
        ("run", design.run_id),
        ("status", design.status),
        ("cells", f"{len(records)} of {design.planned_cells}"),
        ("recommendation", analysis.recommendation),
        ("comparator", design.comparator),
        ("split", design.split),
        ("fingerprint", design.fingerprint),
        ("preregistration", design.preregistration_hash or "none"),
        ("commit", design.commit_sha or "-"),
    ]
    html = render_page(
        "campaign.html",
        title=f"campaign {design.campaign_id}",
        heading=f"Campaign {design.campaign_id}",
        facts=facts,
        fact_ids={"recommendation": "recommendation", "fingerprint": "fingerprint"},
        simulated=simulated,
        **context,
    )
    markdown = _MD.get_template("campaign.md").render(simulated=simulated, **context)
    lines = "".join(r.model_dump_json() + "\n" for r in records)
    return analysis, {"records.jsonl": lines, "report.md": markdown, "report.html": html}


def summary_json(input: CampaignArtifactsInput, analysis: Analysis) -> str:
    summary = {
        "run_id": input.run_id,
        "campaign_id": input.document["campaign_id"],
        "status": input.status,
        "fingerprint": input.fingerprint,
        "preregistration_hash": input.document.get("preregistration_hash"),
        "cells": {
            "planned": input.planned_cells,
            "recorded": len(input.records),
            "failed": sum(1 for r in input.records if failed(r)),
            "cancelled": sum(1 for r in input.records if was_cancelled(r)),
            "unsettled": sum(1 for r in input.records if r.failure_class == "unsettled"),
        },
        "decisions": analysis.decisions,
        "recommendation": analysis.recommendation,
        "recommended_variant": analysis.recommended_variant,
        "analysis": analysis.model_dump(mode="json"),
        "budget": input.budget.model_dump(),
        "spent": input.spent.model_dump(),
        "error": input.error,
        "started_at": input.started_at,
        "written_at": input.written_at,
    }
    return json.dumps(summary, indent=2, sort_keys=True) + "\n"


class CampaignArtifactActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_CAMPAIGN_ARTIFACTS)
    async def write_campaign_artifacts(
        self, input: CampaignArtifactsInput
    ) -> CampaignArtifactsResult:
        try:
            return await in_thread(self.write, input)
        except REFUSED as exc:
            raise refusal(exc) from None

    def write(self, input: CampaignArtifactsInput) -> CampaignArtifactsResult:
        check_writer(input.run_id, self.store, input.chain)
        analysis, files = render_report(ReportDesign.of(input), input.records)
        files["summary.json"] = summary_json(input, analysis)
        files["campaign.json"] = json.dumps(input.document, indent=2, sort_keys=True) + "\n"
        self.store.write_all(input.run_id, files)
        run_dir = str(self.store.run_dir(input.run_id))
        return CampaignArtifactsResult(
            run_dir=run_dir,
            decisions=analysis.decisions,
            recommendation=analysis.recommendation,
            recommended_variant=analysis.recommended_variant,
        )
