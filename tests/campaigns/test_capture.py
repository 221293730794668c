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


async def test_an_invalid_record_is_a_genuine_error_that_drains_and_fails(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider
) -> None:
    queue, settings = http_queue
    # The judge grades with an absurd number: the cell's record cannot hold an infinite score.
    fake.responder = lambda seen: Reply(body=openai_completion("Graded.\n1e999"))
    doc = document(route={"require_auth": False}, seeds=[0, 1, 2], concurrency=4)
    doc["variants"] = [
        {"id": "fast", "kind": "single", "config": {"model": "sim:default"}},
        {"id": "slow", "kind": "single", "config": {"model": "sim:default,latency=fixed:3000"}},
    ]
    doc["comparator"] = "fast"
    doc["scenarios"] = [
        {"id": "s0", "task": "Sort.", "scorer": {"kind": "judge", "model": "corp:m", "rubric": "r"}}
    ]
    handle_error = await failure(client, queue, doc)
    assert handle_error.type == "record.invalid"
    run_dir = next(p for p in settings.runs_dir.iterdir() if (p / "campaign.json").is_file())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"].startswith("record.invalid")
    rows = records(run_dir)
    # The slow sibling was running when the error came: cancelled, its paid call recorded;
    # the cells after it never started.
    slow = [r for r in rows if r["variant"] == "slow"]
    assert [(r["seed"], r["failure_class"], r["calls"]) for r in slow] == [(0, "cancelled", 1)]
    assert len(rows) < 6
    assert 1 <= len(fake.seen) <= 3  # only fast cells reached their judge


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
