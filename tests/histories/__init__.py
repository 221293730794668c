"""Saved histories (``*.json``) that ``tests/test_replay.py`` replays, and the scripts that
record them."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.names import TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult

OUT = Path(__file__).parent


async def record_tournament(input: TournamentInput, workflow_id: str, file: str) -> None:
    """Run one Tournament to its end on a fresh dev server and save its history as ``file``."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    settings = load_settings(home=tempfile.mkdtemp())
    client = await connect(settings, env.client.service_client.config.target_host)
    queue = str(uuid.uuid4())
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            TOURNAMENT, input, id=workflow_id, task_queue=queue, result_type=TournamentResult
        )
        await handle.result()
        (OUT / file).write_text((await handle.fetch_history()).to_json())
    await env.shutdown()
