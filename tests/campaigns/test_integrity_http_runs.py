"""Capture integrity of HTTP cells from real runs: a natural trigger per issue, under each policy.

The raw-event issues (``no_raw_sink``, ``missing_raw_events``, ``orphan_llm_span``) of cells
whose model speaks HTTP to a local fake provider; ``no_run``, ``missing_llm_spans`` and
``missing_outcome`` are in test_integrity_runs.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from tests.campaigns.helpers import document, run_campaign
from tests.campaigns.test_workflow import records
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from tests.worker_process import declare_fake, start_worker
from worker.worker import WorkerOptions, running_worker
from workflows.campaign.matrix import cell_run_id
from workflows.campaign.types import CampaignResult

POLICIES = ["throw", "mark_failed", "log"]


@pytest.fixture
async def http_queue(
    client: Client, settings: Settings, fake: FakeProvider, tmp_path: Path
) -> AsyncIterator[tuple[str, Settings]]:
    """A worker declaring an HTTP endpoint (the fake) and a command agent ``writer``."""
    script = tmp_path / "writer.py"
    script.write_text("import sys\nprint('Polished: ' + sys.stdin.read()[:40])\n")
    configured = with_endpoint(
        with_endpoint(settings, "corp", Endpoint(kind="openai", base_url=fake.url)),
        "writer",
        Endpoint(kind="command", argv=[sys.executable, str(script)]),
    )
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, configured, WorkerOptions(task_queue=queue)):
        yield queue, configured


def http_document(policy: str, variant: dict[str, Any]) -> dict[str, Any]:
    doc = document(integrity=policy, route={"require_auth": False}, seeds=[0], concurrency=1)
    doc["variants"][1] = variant
    doc["scenarios"] = [{"id": "s0", "task": "Sort.", "scorer": {"kind": "regex", "pattern": "."}}]
    return doc


def check_policy(outcome: CampaignResult | ApplicationError, row: dict[str, Any], policy: str,
                 issue: str) -> None:  # fmt: skip
    if policy == "throw":
        assert isinstance(outcome, ApplicationError) and outcome.type == "integrity.failed"
        assert issue in outcome.message
        assert row["failure_class"] == "integrity_failed"
    elif policy == "mark_failed":
        assert isinstance(outcome, CampaignResult) and outcome.failed_cells == 1
        assert (row["failure_class"], row["holdout_score"]) == ("integrity_failed", None)
    else:  # logged: the cell keeps its score
        assert isinstance(outcome, CampaignResult) and outcome.failed_cells == 0
        assert (row["failure_class"], row["holdout_score"]) == (None, 1.0)


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_raw_event_sink_on_a_full_disk_is_no_raw_sink(
    client: Client,
    http_queue: tuple[str, Settings],
    fake: FakeProvider,
    policy: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The cell's raw-events file cannot be written (ENOSPC: it is a link to /dev/full, as on
    a full disk). The paid call still answers, once (a failed write must not make the call fail
    and be paid again); the worker log says what was lost; the capture check flags it."""
    queue, settings = http_queue
    run_id = f"camp-nosink-{policy}-{uuid.uuid4().hex[:6]}"
    doc = http_document(policy, {"id": "http", "kind": "single", "config": {"model": "corp:m"}})
    cell_dir = settings.runs_dir / cell_run_id(run_id, "http", "s0", 0)
    cell_dir.mkdir(parents=True)
    (cell_dir / "raw-events.jsonl").symlink_to("/dev/full")
    with caplog.at_level(logging.WARNING, logger="activities.raw_events"):
        outcome = await run_campaign(client, queue, doc, run_id)
    row = next(r for r in records(settings.runs_dir / run_id) if r["variant"] == "http")
    assert row["integrity_issues"] == ["no_raw_sink"] and row["calls"] == 1
    assert len(fake.seen) == 1
    assert any("not recorded" in r.getMessage() and "No space" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    check_policy(outcome, row, policy, "no_raw_sink")


# An HTTP draft polished by a worker-declared command agent: the command runs no HTTP request,
# so its model call has no request event to cover its span.
MIXED_PLAN = {
    "schema": "ponder-plan/1",
    "name": "draft-polish",
    "steps": [
        {"id": "draft", "kind": "agent", "prompt": "Draft ${input.task}", "model": "corp:m"},
        {"id": "polish", "kind": "agent", "deps": ["draft"], "prompt": "${steps.draft.output}",
         "model": "writer:agent"},
    ],
}  # fmt: skip


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_command_step_in_an_http_plan_is_an_orphan_llm_span(
    client: Client, http_queue: tuple[str, Settings], fake: FakeProvider, policy: str
) -> None:
    queue, settings = http_queue
    run_id = f"camp-orphan-{policy}-{uuid.uuid4().hex[:6]}"
    doc = http_document(policy, {"id": "mixed", "kind": "plan", "config": {"plan": MIXED_PLAN}})
    outcome = await run_campaign(client, queue, doc, run_id)
    row = next(r for r in records(settings.runs_dir / run_id) if r["variant"] == "mixed")
    # Both calls ran and left events; only the HTTP one is a request. The command's run
    # record is no broken exchange (not missing_raw_events).
    assert row["integrity_issues"] == ["orphan_llm_span"] and row["calls"] == 2, row
    lines = (settings.runs_dir / row["run_id"] / "raw-events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert sorted(e["provider_kind"] for e in events) == ["command", "openai"]
    assert len(fake.seen) == 1
    check_policy(outcome, row, policy, "orphan_llm_span")


async def test_a_raw_event_cut_short_by_a_full_disk_is_missing_raw_events(
    client: Client, settings: Settings, fake: FakeProvider, server_address: str, tmp_path: Path
) -> None:
    """The provider answers with a bulky envelope (logprobs, ~200 KB) and the worker's disk
    fills part-way through its raw event: here a file-size limit (``ulimit -f`` 64 KB) on the
    worker process, which fails a write after the bytes that fit, as ENOSPC does. The cell's
    raw events end in a line cut short: the exchange is not whole (``missing_raw_events``) and
    the call has no readable request (``orphan_llm_span``). The call is paid once.

    One worker process (its limit is per process) runs a campaign per policy at once."""
    configured = declare_fake(settings, fake.url, "corp")
    bulk = {"content": [{"token": "x", "logprob": -0.1}] * 7000}
    fake.responder = lambda seen: Reply(body=openai_completion("Sorted.", logprobs=bulk))
    queue = f"test-{uuid.uuid4()}"
    log = tmp_path / "worker.log"
    limit = 64_000
    worker = await start_worker(configured, server_address, queue, output=log, max_file_bytes=limit)
    run_ids = {policy: f"camp-cut-{policy}-{uuid.uuid4().hex[:6]}" for policy in POLICIES}
    variant = {"id": "http", "kind": "single", "config": {"model": "corp:m"}}
    try:
        outcomes = await asyncio.gather(
            *(run_campaign(client, queue, http_document(p, variant), run_ids[p]) for p in POLICIES)
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        await worker.wait()
    assert len(fake.seen) == len(POLICIES)  # one paid call per cell, none repeated
    assert log.read_text().count("File too large") == len(POLICIES)
    for policy, outcome in zip(POLICIES, outcomes, strict=True):
        rows = records(settings.runs_dir / run_ids[policy])
        row = next(r for r in rows if r["variant"] == "http")
        assert row["integrity_issues"] == ["missing_raw_events", "orphan_llm_span"], row
        raw = (settings.runs_dir / row["run_id"] / "raw-events.jsonl").read_bytes()
        assert len(raw) == limit and not raw.endswith(b"\n")  # the disk took what fitted
        check_policy(outcome, row, policy, "missing_raw_events")
