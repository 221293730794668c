"""Artifact writes land in the run's order: an attempt that outlived its write writes nothing.

The end-to-end case is the one CI saw: a worker shut down while a write was in its thread
(``WorkerShutdown`` after the grace period, retried on the next worker), the run completed on
the next worker, and the abandoned thread then rewrote ``summary.json`` as ``running``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Settings
from activities.run_store import RunStore
from activities.tournament.artifacts import TournamentArtifactActivities
from activities.tournament.write_order import ORDER_FILE, WriteKey, is_older
from tests.test_run_store import as_workflow
from tests.tournament.helpers import start
from tests.tournament.test_incremental_artifacts import _snapshot
from worker.worker import WorkerOptions, running_worker
from workflows.call_options import CallOptions
from workflows.tournament.types import TournamentSnapshot

EARLY, LATE = "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01+00:00"


def test_a_key_is_older_by_time_then_by_number() -> None:
    assert is_older(WriteKey(EARLY, 2), WriteKey(EARLY, 3))
    assert is_older(WriteKey(EARLY, 9), WriteKey(LATE, 1))  # a reset run's writes come later
    assert not is_older(WriteKey(EARLY, 3), WriteKey(EARLY, 3))  # a retry of the same write
    assert not is_older(WriteKey(LATE, 1), WriteKey(EARLY, 9))
    assert not is_older(WriteKey(EARLY, 1), None)
    # Offsets compare as instants, not as text.
    assert is_older(WriteKey("2026-01-01T01:00:00+02:00", 5), WriteKey(EARLY, 1))


def _keyed(run_id: str, status: str, seq: int | None, at: str = EARLY) -> TournamentSnapshot:
    snap = _snapshot(run_id, events=1, after=0, populations={0: ["a"]})
    return snap.model_copy(update={"status": status, "write_seq": seq, "written_at": at})


def _status(run_dir: Path) -> str:
    return str(json.loads((run_dir / "summary.json").read_text())["status"])


async def test_a_write_older_than_the_last_landed_writes_nothing(tmp_path: Path) -> None:
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    activities = TournamentArtifactActivities(RunStore(tmp_path))
    env = as_workflow(run_id)
    run_dir = tmp_path / run_id
    write = activities.write_tournament_artifacts
    assert await env.run(write, _keyed(run_id, "running", 2)) == str(run_dir)
    assert _status(run_dir) == "running"
    await env.run(write, _keyed(run_id, "cancelled", 3))
    assert (run_dir / "report.html").exists()
    summary = (run_dir / "summary.json").stat()
    await env.run(write, _keyed(run_id, "running", 2))  # lands late: refused, files untouched
    assert _status(run_dir) == "cancelled"
    assert (run_dir / "summary.json").stat().st_ino == summary.st_ino
    await env.run(write, _keyed(run_id, "cancelled", 3))  # a retry of the last one: written
    assert (run_dir / "summary.json").stat().st_ino != summary.st_ino
    await env.run(write, _keyed(run_id, "running", 1, LATE))  # a reset run's: later in time
    assert _status(run_dir) == "running"
    assert json.loads((run_dir / ORDER_FILE).read_text()) == [LATE, 1]
    await env.run(write, _keyed(run_id, "completed", None))  # an older workflow's: unordered
    assert _status(run_dir) == "completed"


async def test_a_write_abandoned_by_a_shut_down_worker_never_lands_over_later_ones(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    stalled, release, landed = threading.Event(), threading.Event(), threading.Event()
    write = TournamentArtifactActivities._write

    def stalled_write(self: TournamentArtifactActivities, snap: TournamentSnapshot) -> str:
        """The first worker's disk: its first write stalls in its thread until released."""
        stalled.set()
        release.wait(120)
        try:
            return write(self, snap)
        finally:
            landed.set()

    queue = f"test-{uuid.uuid4()}"
    # No grace: the stalled attempt is given up (WorkerShutdown) and retried by the next worker.
    first = WorkerOptions(queue, graceful_shutdown=timedelta(0), sticky_timeout=timedelta(1))
    try:
        with monkeypatch.context() as patch:
            patch.setattr(TournamentArtifactActivities, "_write", stalled_write)
            async with running_worker(client, settings, first):
                # A model call whose answer the shutdown loses is retried in seconds, not 30.
                calls = CallOptions(heartbeat_timeout_s=2.0)
                handle = await start(
                    client, queue, profile="quick", seed=5, model="sim:default", calls=calls
                )
                assert await asyncio.to_thread(stalled.wait, 120), "no write reached the worker"
        async with running_worker(client, settings, WorkerOptions(queue)):
            result = await handle.result()
        run_dir = Path(result.run_dir)
        assert _status(run_dir) == "completed"
    finally:
        release.set()  # the abandoned thread goes on, as it does in a worker that exits
    assert await asyncio.to_thread(landed.wait, 120)
    assert _status(run_dir) == "completed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["calls"]["used"] == result.spent.calls
