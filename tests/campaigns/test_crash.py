"""SIGKILL the worker in the middle of a campaign: the call in flight is retried, settled cells
never run again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.campaign.cells import SETTLE_CAMPAIGN_CELL
from activities.config import Settings
from activities.heartbeats import HEARTBEAT_TIMEOUT
from tests.campaigns.helpers import document
from tests.campaigns.test_workflow import records
from tests.fakes import FakeProvider, Seen
from tests.worker_process import KilledWorker, declare_fake
from worker.worker import WorkerOptions, running_worker
from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


def crash_document() -> dict:  # type: ignore[type-arg]
    # One cell at a time: then the held call is the only one in flight at the kill. With two,
    # a sibling's answer can reach the fake before its completion reaches history, and that
    # call may rightly run again.
    doc = document(seeds=[0, 1, 2], concurrency=1, route={"require_auth": False})
    doc["calls"] = {"heartbeat_timeout_s": 2}
    doc["variants"] = [
        {"id": "sim", "kind": "single", "config": {"model": "sim:default"}},
        {"id": "http", "kind": "single", "config": {"model": "local:default"}},
    ]
    doc["comparator"] = "sim"
    return doc


async def test_a_killed_worker_does_not_rerun_settled_cells(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    local = declare_fake(settings, fake.url)
    reference_queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, local, WorkerOptions(task_queue=reference_queue)):
        reference = await (
            await client.start_workflow(
                CAMPAIGN,
                crash_document(),
                id=f"ref-{uuid.uuid4().hex[:6]}",
                task_queue=reference_queue,
                result_type=CampaignResult,
            )
        ).result()
    fake.seen.clear()

    # Hold the 5th HTTP call (a cell in the middle of the campaign) and kill the worker there.
    arrivals: list[Seen] = []

    def fifth(seen: Seen) -> bool:
        arrivals.append(seen)
        return len(arrivals) == 5

    fake.hold_when = fifth
    queue = f"test-{uuid.uuid4()}"
    async with KilledWorker(settings, server_address, queue) as worker:
        try:
            handle = await client.start_workflow(
                CAMPAIGN,
                crash_document(),
                id=f"crash-{uuid.uuid4().hex[:6]}",
                task_queue=queue,
                result_type=CampaignResult,
                task_timeout=timedelta(seconds=2),
            )
            deadline = time.monotonic() + 60
            while len(arrivals) < 5:
                assert time.monotonic() < deadline, "the 5th call never arrived"
                await asyncio.sleep(0.05)
            await worker.kill_and_restart()
            held = arrivals[4].call_id
            fake.resume()
            result = await asyncio.wait_for(handle.result(), 120)
        finally:
            fake.resume()  # before the worker stops: a held call would keep it waiting

    counts = Counter(s.call_id for s in fake.seen)
    repeated = {call for call, n in counts.items() if n > 1}
    # The kill interrupted the held call (its answer went to a dead worker) and the new worker
    # retried it; no other call ran twice.
    assert repeated == {held}, "the call in flight at the kill was not retried"
    assert counts[held] == 2
    assert len(counts) == 9  # one logical call per HTTP cell, none lost, none added
    assert result.cells == reference.cells == 18 and result.failed_cells == 0
    mine = json.loads((Path(result.run_dir) / "summary.json").read_text())
    theirs = json.loads((Path(reference.run_dir) / "summary.json").read_text())
    assert mine["analysis"] == theirs["analysis"] and mine["decisions"] == theirs["decisions"]
    # Cell by cell the same records, but for the run ids and wall times; the same report once
    # each run id is the reference's.
    mine_rows, their_rows = records(Path(result.run_dir)), records(Path(reference.run_dir))
    assert [same(r) for r in mine_rows] == [same(r) for r in their_rows]
    report = (Path(result.run_dir) / "report.md").read_text()
    for m, t in [
        *zip(mine_rows, their_rows, strict=True),
        ({"run_id": handle.id}, {"run_id": reference.run_id}),
    ]:
        report = report.replace(m["run_id"], t["run_id"])
    assert report == (Path(reference.run_dir) / "report.md").read_text()

    # The retry is visible in the held cell's history (its child workflow, whose id is the
    # cell's run id): its model call started a second attempt after the kill.
    history = await client.get_workflow_handle(held.split("/")[0]).fetch_history()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert max(attempts) > 1


def same(record: dict) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in record.items() if k not in ("run_id", "wall_ms")}


async def test_a_worker_killed_while_a_cell_settles_delays_it_by_seconds(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    """The settle step heartbeats: a worker SIGKILLed while it runs (here a command scorer that
    hangs the first time) is noticed within its heartbeat timeout and the step runs again on the
    restarted worker, instead of after its 15-minute start-to-close timeout."""
    marker, pid_file = tmp_path / "scorer-started", tmp_path / "scorer.pid"
    scorer = tmp_path / "score.sh"
    scorer.write_text(
        "#!/bin/sh\ncat > /dev/null\n"
        f'if [ ! -e "{marker}" ]; then\n'
        f'  echo $$ > "{pid_file}"; touch "{marker}"; exec sleep 600\n'
        "fi\n"
        "echo 1\n"
    )
    scorer.chmod(0o755)
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.slowscore]\nkind = "command"\nargv = ["{scorer}"]\n'
    )
    doc = document(seeds=[0], min_pairs=1)
    doc["variants"] = [{"id": "single", "kind": "single", "config": {"model": "sim:default"}}]
    scored = {"kind": "command", "name": "slowscore"}
    doc["scenarios"] = [{"id": "s0", "task": "t", "scorer": scored}]
    queue = f"test-{uuid.uuid4()}"
    try:
        async with KilledWorker(settings, server_address, queue) as worker:
            handle = await client.start_workflow(
                CAMPAIGN,
                doc,
                id=f"settle-kill-{uuid.uuid4().hex[:6]}",
                task_queue=queue,
                result_type=CampaignResult,
                task_timeout=timedelta(seconds=2),
            )
            deadline = time.monotonic() + 60
            while not marker.exists():
                assert time.monotonic() < deadline, "the scorer never started"
                await asyncio.sleep(0.1)
            await worker.kill_and_restart()
            killed_at = time.monotonic()
            result = await asyncio.wait_for(handle.result(), 120)
            took = time.monotonic() - killed_at
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the orphaned first scorer
    assert result.cells == 1 and result.failed_cells == 0
    assert took < 60, f"the cell settled {took:.0f} s after the kill"
    history = await handle.fetch_history()
    settles = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == SETTLE_CAMPAIGN_CELL
    ]
    assert [s.heartbeat_timeout.ToTimedelta() for s in settles] == [HEARTBEAT_TIMEOUT]
