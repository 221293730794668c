"""A campaign's artifacts: ``records.jsonl``, ``summary.json``, ``report.md``, ``report.html``.

The report is a pure function of the records and the design (no clock, no host): the same
records give the same report bytes, so ``ponder campaign report ID`` can re-render it from
``records.jsonl`` and a replayed campaign can be compared byte for byte. Timestamps live only in
``summary.json``. HTML comes from ``templates/campaign.html`` on the shared base layout, and its
plots are inline SVG (no network assets); the drawing is ``activities.campaign.render``.
"""

from __future__ import annotations

import json

from temporalio import activity

from activities.campaign.render import ReportDesign, render_report
from activities.run_files import in_run_store
from activities.run_store import RunStore, check_writer
from workflows.campaign.activity_contracts import WRITE_CAMPAIGN_ARTIFACTS
from workflows.campaign.analysis import Analysis
from workflows.campaign.records import failed, was_cancelled
from workflows.campaign.types import CampaignArtifactsInput, CampaignArtifactsResult
from workflows.progress_file import PROGRESS_FILE, progress_json

__all__ = [
    "WRITE_CAMPAIGN_ARTIFACTS",
    "CampaignArtifactActivities",
    "ReportDesign",
    "render_report",
]


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
        return await in_run_store(self.write, input)

    def write(self, input: CampaignArtifactsInput) -> CampaignArtifactsResult:
        check_writer(input.run_id, self.store, input.chain)
        analysis, files = render_report(ReportDesign.of(input), input.records)
        files["summary.json"] = summary_json(input, analysis)
        files["campaign.json"] = json.dumps(input.document, indent=2, sort_keys=True) + "\n"
        if input.progress is not None:
            files[PROGRESS_FILE] = progress_json(
                "campaign",
                input.progress.model_dump(mode="json"),
                started_at=input.started_at,
                written_at=input.written_at,
            )
        self.store.write_all(input.run_id, files)
        run_dir = str(self.store.run_dir(input.run_id))
        return CampaignArtifactsResult(
            run_dir=run_dir,
            decisions=analysis.decisions,
            recommendation=analysis.recommendation,
            recommended_variant=analysis.recommended_variant,
        )
