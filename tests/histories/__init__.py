"""Saved histories (``*.json``) that ``tests/test_replay.py`` replays, and the scripts that
record them.

Every recorder runs its workflows inside :func:`recording` (a fresh dev server, one worker) and
writes each history with :func:`save`. ``PONDER_HISTORY_OUT=<dir>`` sends the files elsewhere, so
a recorder can be checked without touching the committed histories.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.config import Settings, load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.names import QUERY_STATUS, TOURNAMENT
from workflows.plan.run_types import PlanStatus
from workflows.tournament.types import TournamentInput, TournamentResult

__all__ = [
    "OUT",
    "Recording",
    "out_dir",
    "record_tournament",
    "recording",
    "save",
    "wait_for_state",
]

OUT = Path(__file__).parent


def out_dir() -> Path:
    """Where recorders write: ``PONDER_HISTORY_OUT`` when set, else beside this module."""
    return Path(os.environ.get("PONDER_HISTORY_OUT") or OUT)


@dataclass(frozen=True)
class Recording:
    client: Client
    task_queue: str


@contextlib.asynccontextmanager
async def recording(
    settings: Settings | None = None,
    *,
    task_queue: str | None = None,
    deployment: str | None = None,
    build_id: str | None = None,
) -> AsyncIterator[Recording]:
    """A fresh dev server and one worker on ``task_queue`` (a uuid unless given) for the block.

    ``settings`` defaults to those of an empty temporary home. ``deployment``: the worker is a
    versioned one (``ponder worker --deployment``) of that deployment, build ``build_id``; it
    takes no run until the recorder makes its version current
    (``worker.deployment.take_first_version``).
    """
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    try:
        settings = settings or load_settings(home=tempfile.mkdtemp())
        client = await connect(settings, env.client.service_client.config.target_host)
        queue = task_queue or str(uuid.uuid4())
        options = WorkerOptions(task_queue=queue, deployment=deployment, build_id=build_id)
        async with running_worker(client, settings, options):
            yield Recording(client, queue)
    finally:
        await env.shutdown()


async def save(handle: WorkflowHandle, file: str) -> Path:
    """Write ``handle``'s history as ``file`` in :func:`out_dir`."""
    path = out_dir() / file
    path.write_text((await handle.fetch_history()).to_json())
    return path


async def record_tournament(input: TournamentInput, workflow_id: str, file: str) -> None:
    """Run one Tournament to its end on a fresh dev server and save its history as ``file``."""
    async with recording() as rec:
        handle = await rec.client.start_workflow(
            TOURNAMENT,
            input,
            id=workflow_id,
            task_queue=rec.task_queue,
            result_type=TournamentResult,
        )
        await handle.result()
        await save(handle, file)


async def wait_for_state(handle: WorkflowHandle, state: str) -> PlanStatus:
    """A plan run's status once it is in ``state``; an error if the run ends first (a change
    that no longer reaches it must fail the recorder, not leave it waiting)."""
    while True:
        status = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        if status.state == state:
            return status
        if status.state in ("completed", "failed", "cancelled"):
            raise RuntimeError(f"the run ended {status.state} before it was {state}")
        await asyncio.sleep(0.05)
