"""Capture over real HTTP (a local fake provider) and a genuine error that drains the campaign."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.campaigns.helpers import document
from tests.campaigns.test_integrity_runs import EMPTY_FANOUT_PLAN
from tests.campaigns.test_workflow import failure, records, start
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from worker.worker import WorkerOptions, running_worker


@pytest.fixture
async def http_queue(
    client: Client, settings: Settings, fake: FakeProvider
) -> AsyncIterator[tuple[str, Settings]]:
    # ponder_headers: the fake answers as the sim would, by role (a tournament judges).
    corp = Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    configured = with_endpoint(settings, "corp", corp)
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, configured, WorkerOptions(task_queue=queue)):
        yield queue, configured


def http_document(**overrides: object) -> dict:  # type: ignore[type-arg]
    doc = document(route={"require_auth": False}, seeds=[0, 1], **overrides)
    doc["variants"] = [
        {"id": "single", "kind": "single", "config": {"model": "sim:default"}},
        {"id": "http", "kind": "single", "config": {"model": "corp:m"}},
    ]
    return doc


async def test_http_cells_leave_raw_events_that_pass_the_capture_check(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    result = await (await start(client, queue, http_document(integrity="throw"))).result()
    assert result.failed_cells == 0
    rows = [r for r in records(Path(result.run_dir)) if r["variant"] == "http"]
    assert len(rows) == 6 and all(r["integrity_issues"] == [] for r in rows)
    for row in rows:
        events = (settings.runs_dir / row["run_id"] / "raw-events.jsonl").read_text().splitlines()
        assert len(events) == 1 and {"request", "response"} <= set(json.loads(events[0]))
    assert len(fake.seen) == 6


async def test_a_genuine_error_drains_the_running_cells_and_fails(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    # Under integrity "throw", a plan cell that asks no model (missing_llm_spans) is a genuine
    # error. (This test used a judge grading 1e999, an invalid record; a judge's grade is now
    # checked against its scale and such a cell is scorer_failed instead.)
    doc = document(integrity="throw", seeds=[0, 1, 2], concurrency=4)
    doc["variants"] = [
        {
            "id": "fast",
            "kind": "plan",
            "config": {"plan": EMPTY_FANOUT_PLAN, "args": {"items": []}},
        },
        {"id": "slow", "kind": "single", "config": {"model": "sim:default,latency=fixed:3000"}},
    ]
    doc["comparator"] = "fast"
    doc["scenarios"] = [{"id": "s0", "task": "Sort.", "scorer": {"kind": "regex", "pattern": "."}}]
    handle_error = await failure(client, worker_queue, doc)
    assert handle_error.type == "integrity.failed"
    run_dir = next(p for p in settings.runs_dir.iterdir() if (p / "campaign.json").is_file())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"].startswith("integrity.failed")
    rows = records(run_dir)
    # The slow sibling was running when the error came: cancelled, its paid call recorded;
    # the cells after it never started.
    slow = [r for r in rows if r["variant"] == "slow"]
    assert [(r["seed"], r["failure_class"], r["calls"]) for r in slow] == [(0, "cancelled", 1)]
    assert len(rows) < 6


async def test_a_plans_tournament_step_over_http_is_captured_in_its_child_run(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    plan = {
        "schema": "ponder-plan/1",
        "name": "tourney",
        "steps": [{"id": "t", "kind": "tournament", "prompt": "${input.task}", "model": "corp:m"}],
    }
    doc = http_document(integrity="throw")
    doc["seeds"] = [0]
    doc["variants"][1] = {"id": "http", "kind": "plan", "config": {"plan": plan}}
    doc["scenarios"] = doc["scenarios"][:1]
    result = await (await start(client, queue, doc)).result()
    row = next(r for r in records(Path(result.run_dir)) if r["variant"] == "http")
    assert row["failure_class"] is None and row["integrity_issues"] == [], (row["error"], row)
    # The tournament's calls left their raw events in the child run, the plan's in its own.
    child_events = [
        line
        for path in settings.runs_dir.glob(f"{row['run_id']}.*/raw-events.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert row["calls"] == len(fake.seen) == len(child_events) > 1


async def test_a_judge_grade_is_read_on_its_declared_scale(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, _ = http_queue
    fake.responder = lambda seen: Reply(body=openai_completion("Graded.\n8"))
    doc = document(route={"require_auth": False}, seeds=[0])
    judge = {"kind": "judge", "model": "corp:m", "rubric": "r"}
    doc["scenarios"] = [
        {"id": "ten", "task": "Sort.", "scorer": {**judge, "scale": 10}},
        {"id": "one", "task": "Sort.", "scorer": judge},  # asked for 0 to 1, answered 8
    ]
    result = await (await start(client, queue, doc)).result()
    rows = {(r["variant"], r["scenario"]): r for r in records(Path(result.run_dir))}
    assert len(rows) == 4 and len(fake.seen) == 4
    asked = sorted(
        s.body["messages"][-1]["content"].split("score from 0 to ")[1][:2] for s in fake.seen
    )
    assert asked == ["1 ", "1 ", "10", "10"]  # each judge was asked for its scale
    for variant, _ in rows:
        assert rows[variant, "ten"]["holdout_score"] == 0.8
        one = rows[variant, "one"]
        assert (one["failure_class"], one["holdout_score"]) == ("scorer_failed", None)
        assert "grade 8 is outside the scorer's scale [0, 1]" in one["error"]
        # Each record keeps its judge: the model, the raw verdict, the grade on its scale.
        for scenario, scale in (("ten", 10.0), ("one", 1.0)):
            meta = rows[variant, scenario]["judge_metadata"]
            assert (meta["model"], meta["raw_verdict"], meta["grade"], meta["scale"]) == (
                "corp:m", "Graded.\n8", 8.0, scale,
            )  # fmt: skip
            assert meta["answered_by"] and meta["usage"]["output_tokens"] > 0
    html = (Path(result.run_dir) / "report.html").read_text()
    assert html.count('<pre class="verdict">Graded.\n8</pre>') == 4
