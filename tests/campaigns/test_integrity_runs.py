"""Capture integrity from real runs: a natural trigger per issue, under each policy.

``throw`` fails the campaign (``integrity.failed``) with its artifacts written; ``mark_failed``
fails the cell and keeps the report; ``log`` keeps the cell's score and lists the issue.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from tests.campaigns.helpers import document, run_campaign
from tests.campaigns.test_workflow import records
from workflows.campaign.matrix import cell_run_id
from workflows.campaign.types import CampaignResult

# A plan whose fan-out runs over the scenario's items: with none it ends "completed" having
# asked no model anything, the runner bug ``missing_llm_spans`` exists to catch.
EMPTY_FANOUT_PLAN = {
    "schema": "ponder-plan/1",
    "name": "per-item",
    "steps": [
        {"id": "fan.one", "kind": "agent", "prompt": "Do ${input.task}", "model": "sim:default"},
        {
            "id": "fan",
            "kind": "fanout",
            "fanout": {"over": "${input.items}", "chain": ["fan.one"], "max_fanout": 3},
        },
    ],
}


def plan_document(policy: str) -> dict[str, Any]:
    doc = document(integrity=policy, seeds=[0], concurrency=1)
    doc["variants"][1] = {
        "id": "per-item",
        "kind": "plan",
        "config": {"plan": EMPTY_FANOUT_PLAN, "args": {"items": []}},
    }
    doc["scenarios"] = [{"id": "s0", "task": "Sort.", "scorer": {"kind": "regex", "pattern": "."}}]
    return doc


@pytest.mark.parametrize("policy", ["throw", "mark_failed", "log"])
async def test_a_plan_that_asks_no_model_is_missing_llm_spans(
    client: Client, worker_queue: str, settings: Settings, policy: str
) -> None:
    run_id = f"camp-spans-{policy}-{uuid.uuid4().hex[:6]}"
    outcome = await run_campaign(client, worker_queue, plan_document(policy), run_id)
    rows = records(settings.runs_dir / run_id)
    plan_row = next(r for r in rows if r["variant"] == "per-item")
    assert plan_row["integrity_issues"] == ["missing_llm_spans"] and plan_row["calls"] == 0
    summary = json.loads((settings.runs_dir / run_id / "summary.json").read_text())
    if policy == "throw":
        assert isinstance(outcome, ApplicationError) and outcome.type == "integrity.failed"
        assert "missing_llm_spans" in outcome.message
        assert summary["status"] == "failed" and summary["error"].startswith("integrity.failed")
        assert plan_row["failure_class"] == "integrity_failed"
    elif policy == "mark_failed":
        assert isinstance(outcome, CampaignResult) and outcome.failed_cells == 1
        assert (plan_row["failure_class"], plan_row["holdout_score"]) == ("integrity_failed", None)
        assert summary["status"] == "completed"
    else:
        assert isinstance(outcome, CampaignResult) and outcome.failed_cells == 0
        assert plan_row["failure_class"] is None and plan_row["holdout_score"] == 1.0


@pytest.mark.parametrize("policy", ["throw", "mark_failed", "log"])
async def test_a_cell_whose_run_directory_is_a_symlink_leaves_no_run(
    client: Client, worker_queue: str, settings: Settings, tmp_path: Path, policy: str
) -> None:
    """Storage misconfigured: a symlink where a cell's run directory goes (runs moved to other
    storage by hand). The run store refuses to write through it, so the cell leaves no run."""
    run_id = f"camp-norun-{policy}-{uuid.uuid4().hex[:6]}"
    doc = document(integrity=policy, seeds=[0, 1], concurrency=1)
    doc["variants"][1] = {"id": "other", "kind": "single", "config": {"model": "sim:default"}}
    doc["scenarios"] = doc["scenarios"][:1]
    moved = cell_run_id(run_id, "other", "s0", 0)
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (settings.runs_dir / moved).symlink_to(elsewhere, target_is_directory=True)
    outcome = await run_campaign(client, worker_queue, doc, run_id)
    rows = {r["run_id"]: r for r in records(settings.runs_dir / run_id)}
    assert rows[moved]["integrity_issues"] == ["no_run"]
    assert rows[moved]["failure_class"] == "runner_threw"
    assert rows[moved]["error"].startswith("run.dir_invalid")
    assert not any(elsewhere.iterdir())  # nothing was written through the link
    if policy == "throw":
        assert isinstance(outcome, ApplicationError) and outcome.type == "integrity.failed"
        assert (
            f"cell {moved}: capture integrity failed (no_run); the cell itself failed: "
            "run.dir_invalid: " in outcome.message
        )
        assert len(rows) == 3  # stopped: the cell after it never started
    else:
        assert isinstance(outcome, CampaignResult) and outcome.failed_cells == 1
        assert len(rows) == 4


# A review gate that rejects the draft on a terminal route: the run completes (the route is
# the plan's own decision) but its last step, the cell's answer, never runs.
ABANDONING_PLAN = {
    "schema": "ponder-plan/1",
    "name": "draft-review-ship",
    "steps": [
        {"id": "draft", "kind": "agent", "prompt": "Draft ${input.task}", "model": "sim:default"},
        {
            "id": "review",
            "kind": "gate",
            "deps": ["draft"],
            "prompt": "Review ${steps.draft.output}. End with GATE: PASS or GATE: FAIL.",
            "model": "sim:default",
            "fail_route": "terminal:abandon",
            "x-sim": {"outputs": ["not worth it\nGATE: FAIL"]},
        },
        {"id": "ship", "kind": "agent", "deps": ["review"], "prompt": "Polish it.",
         "model": "sim:default"},
    ],
}  # fmt: skip


@pytest.mark.parametrize("policy", ["throw", "mark_failed", "log"])
async def test_a_plan_that_ends_before_its_answer_is_missing_outcome(
    client: Client, worker_queue: str, settings: Settings, policy: str
) -> None:
    run_id = f"camp-outcome-{policy}-{uuid.uuid4().hex[:6]}"
    doc = plan_document(policy)
    doc["variants"][1] = {"id": "review", "kind": "plan", "config": {"plan": ABANDONING_PLAN}}
    outcome = await run_campaign(client, worker_queue, doc, run_id)
    row = next(r for r in records(settings.runs_dir / run_id) if r["variant"] == "review")
    assert row["integrity_issues"] == ["missing_outcome"] and row["calls"] == 2
    assert row["holdout_score"] is None
    if policy == "throw":
        assert isinstance(outcome, ApplicationError) and outcome.type == "integrity.failed"
        assert row["failure_class"] == "integrity_failed"
    elif policy == "mark_failed":
        assert isinstance(outcome, CampaignResult) and row["failure_class"] == "integrity_failed"
    else:  # logged, and with no answer nothing to score
        assert isinstance(outcome, CampaignResult) and row["failure_class"] == "scorer_failed"
