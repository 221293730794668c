"""Campaign control on the real dev server: shared budget, failures, cancel, route, scorers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.service import RPCError

from activities.call_model import CALL_MODEL
from activities.config import Endpoint, Settings
from tests.campaigns.helpers import document
from tests.campaigns.test_workflow import failure, records, start
from tests.conftest import with_endpoint
from worker.worker import WorkerOptions, running_worker
from workflows.campaign.matrix import cell_run_id
from workflows.campaign.types import CampaignEvent, CampaignProgress
from workflows.names import (
    QUERY_EVENTS,
    QUERY_PROGRESS,
    SIGNAL_EXTEND_BUDGET,
    UPDATE_EXTEND_BUDGET,
)
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult


async def progress_until(handle, check, timeout: float = 60.0) -> CampaignProgress:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while True:
            p = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
            if check(p):
                return p
            await asyncio.sleep(0.1)


def singles(**overrides: object) -> dict:  # type: ignore[type-arg]
    doc = document(**overrides)
    doc["variants"] = [
        {"id": "single", "kind": "single", "config": {"model": "sim:default"}},
        {"id": "other", "kind": "single", "config": {"model": "sim:default", "temperature": 0.5}},
    ]
    doc["comparator"] = "single"
    return doc


async def test_shared_budget_pauses_and_extend_resumes(client: Client, worker_queue: str) -> None:
    handle = await start(client, worker_queue, singles(budget={"max_calls": 5}, concurrency=3))
    paused = await progress_until(
        handle, lambda p: p.status == "awaiting_budget" and p.cells_running == 0
    )
    # Each cell reserved its call before it started: never more than the limit.
    assert (paused.cells_done, paused.spent.calls, paused.blocking_limit) == (5, 5, "max_calls")
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(
            UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=3), result_type=ExtendBudgetResult
        )
    await handle.signal(SIGNAL_EXTEND_BUDGET, ExtendBudgetInput(max_calls=2))
    refused = await progress_until(handle, lambda p: bool(p.refused))
    assert "below what is already spent" in refused.refused[-1]
    extended = await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=100), result_type=ExtendBudgetResult
    )
    assert extended.budget.max_calls == 100
    result = await handle.result()
    assert result.cells == 18 and result.spent.calls == 18
    events = await handle.query(QUERY_EVENTS, 0, result_type=list[CampaignEvent])
    types = [e.type for e in events]
    assert "campaign.awaiting_budget" in types and "control.refused" in types
    assert types.index("campaign.resumed") > types.index("budget.extended")


async def test_a_failing_cell_is_recorded_and_the_campaign_goes_on(
    client: Client, worker_queue: str
) -> None:
    doc = document(seeds=[0])
    # Every judge answer is invalid JSON and no retry is allowed: each tournament fails.
    doc["variants"][1]["config"] = {
        "profile": "quick",
        "model": "sim:default,invalid_json_rate=0.99",
        "invalid_json_retries": 0,
    }
    result = await (await start(client, worker_queue, doc)).result()
    assert result.cells == 6 and result.failed_cells == 3
    failed = [r for r in records(Path(result.run_dir)) if r["failure_class"]]
    assert {r["failure_class"] for r in failed} == {"runner_threw"}
    assert all(r["holdout_score"] is None and r["calls"] > 0 for r in failed)
    assert all(r["error"].startswith("judge.persistent_invalid_json") for r in failed), failed[0][
        "error"
    ]
    assert result.decisions == {"deep": "needs_more_data"}


async def test_cancel_while_cells_run_records_them_and_writes_the_partial_report(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    doc = singles(concurrency=2)
    doc["variants"][1]["config"]["model"] = "sim:default,latency=fixed:5000"
    handle = await start(client, worker_queue, doc)
    await progress_until(handle, lambda p: p.cells_done >= 9 and p.cells_running == 2)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    run_dir = settings.runs_dir / handle.id
    rows = records(run_dir)
    cancelled = [r for r in rows if r["failure_class"] == "cancelled"]
    assert len(rows) == 11 and len(cancelled) == 2
    assert all(r["calls"] == 1 for r in cancelled)  # the call in flight counts
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "cancelled" and summary["cells"]["recorded"] == 11
    assert "(cancelled, 11 of 18 cells)" in (run_dir / "report.md").read_text()


async def _calls_in_flight(client: Client, workflow_id: str, within: float = 60) -> None:
    """Until the run has a ``call_model`` attempt running (a paid call in flight); a started
    attempt reaches history only once it ends, so ask for the pending activities."""
    from temporalio.api.enums.v1 import PendingActivityState

    async with asyncio.timeout(within):
        while True:
            with contextlib.suppress(RPCError):  # the child may not exist yet
                described = await client.get_workflow_handle(workflow_id).describe()
                if any(
                    a.activity_type.name == CALL_MODEL
                    and a.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                    for a in described.raw_description.pending_activities
                ):
                    return
            await asyncio.sleep(0.2)


async def test_a_cancel_drains_for_at_most_the_bound_and_records_unsettled_cells(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    """A tournament cell whose calls take a minute drains them when cancelled; the campaign
    waits ``drain_timeout_s`` (1 s here), records the cell ``unsettled`` with its worst case,
    and ends: it waited for those calls with no bound."""
    doc = document(seeds=[0], drain_timeout_s=1)
    doc["variants"] = [
        {
            "id": "deep",
            "kind": "tournament",
            "config": {"profile": "quick", "model": "sim:default,latency=fixed:60000"},
        }
    ]
    doc["scenarios"] = doc["scenarios"][:1]
    doc["comparator"], doc["min_pairs"] = "deep", 1
    doc["calls"] = {"heartbeat_timeout_s": 2}  # the abandoned calls hear of it within seconds
    handle = await start(client, worker_queue, doc)
    await _calls_in_flight(client, cell_run_id(handle.id, "deep", "s0", 0))
    cancelled_at = time.monotonic()
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), 50)  # the calls would land after 60 s
    assert isinstance(info.value.cause, CancelledError)
    took = time.monotonic() - cancelled_at
    assert took < 30, f"the cancel drained for {took:.0f} s"
    run_dir = settings.runs_dir / handle.id
    (row,) = records(run_dir)
    assert row["failure_class"] == "unsettled" and row["integrity_issues"] == ["unsettled"]
    assert row["calls"] == 23  # quick's worst case, counted as spent: the calls may be paid
    assert "drain bound (1 s, drain_timeout_s)" in row["error"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "cancelled" and summary["cells"]["unsettled"] == 1
    assert summary["spent"]["calls"] == 23
    assert "unsettled: did not settle within the drain bound" in (run_dir / "report.md").read_text()
    events = await handle.query(QUERY_EVENTS, 0, result_type=list[CampaignEvent])
    assert "campaign.drain_timeout" in [e.type for e in events]


async def test_route_assertion_reasons(client: Client, settings: Settings) -> None:
    corp = Endpoint(kind="openai", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    configured = with_endpoint(settings, "corp", corp)
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, configured, WorkerOptions(task_queue=queue)):

        def one(model: str, **route: object) -> dict:  # type: ignore[type-arg]
            doc = document(route={"require_auth": False, **route})
            doc["variants"][1] = {"id": "http", "kind": "single", "config": {"model": model}}
            return doc

        def judged_by(model: str, **route: object) -> dict:  # type: ignore[type-arg]
            """A plan variant whose tournament step is judged by ``model``."""
            doc = document(route={"require_auth": False, **route})
            step = {
                "id": "t",
                "kind": "tournament",
                "prompt": "${input.task}",
                "model": "sim:default",
                "tournament": {"judge_model": model},
            }
            plan = {"schema": "ponder-plan/1", "name": "judged", "steps": [step]}
            doc["variants"][1] = {"id": "plan", "kind": "plan", "config": {"plan": plan}}
            return doc

        cases = [
            (one("openai:gpt-4o-mini"), "route.no_explicit_base_url"),
            (one("corp:m", block=["http://127.0.0.1"]), "route.base_url_blocked"),
            (one("corp:m", allow=["re:^https://llm\\.corp/"]), "route.base_url_not_allowed"),
            (one("corp:m", provider="anthropic"), "route.wrong_provider"),
            (one("corp:m", require_auth=True), "route.no_auth"),
            (judged_by("corp:m", block=["http://127.0.0.1"]), "route.base_url_blocked"),
        ]
        for doc, code in cases:
            error = await failure(client, queue, doc)
            assert error.type == code, (code, error.message)
        # The route is asserted before any cell, whatever the capture policy: even `log` runs
        # nothing on a wrong route.
        for policy in ("log", "mark_failed"):
            doc = {**one("openai:gpt-4o-mini"), "integrity": policy}
            error = await failure(client, queue, doc)
            assert error.type == "route.no_explicit_base_url", (policy, error.message)
        # Sim variants pass the same strict route.
        result = await (await start(client, queue, document(seeds=[0]))).result()
        assert result.status == "completed"


async def test_command_scorer_runs_a_worker_declared_command(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    script = tmp_path / "score.py"
    script.write_text(
        "import os, sys\n"
        "text = sys.stdin.read()\n"
        "print('cwd', os.getcwd(), 'env', sorted(os.environ))\n"
        "print(0.25 if 'sim q=' in text else 0)\n"
    )
    scorer = Endpoint(kind="command", argv=[sys.executable, str(script)])
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(
        client, with_endpoint(settings, "grader", scorer), WorkerOptions(task_queue=queue)
    ):
        doc = singles(seeds=[0])
        for scenario in doc["scenarios"]:
            scenario["scorer"] = {"kind": "command", "name": "grader"}
        result = await (await start(client, queue, doc)).result()
        rows = records(Path(result.run_dir))
        assert {r["holdout_score"] for r in rows} == {0.25}
        doc["scenarios"][0]["scorer"] = {"kind": "command", "name": "undeclared"}
        result = await (await start(client, queue, doc)).result()
        failed = [r for r in records(Path(result.run_dir)) if r["failure_class"]]
        assert len(failed) == 2 and "declares no such command" in failed[0]["error"]
    # The document can never carry the command line itself.
    doc["scenarios"][0]["scorer"] = {"kind": "command", "name": "x", "argv": ["sh"]}
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        error = await failure(client, queue, doc)
    assert isinstance(error, ApplicationError) and error.type == "scorer.argv_not_allowed"


async def test_cancel_while_awaiting_budget(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, singles(budget={"max_calls": 1}))
    await progress_until(handle, lambda p: p.status == "awaiting_budget")
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "cancelled" and summary["cells"]["recorded"] == 1
