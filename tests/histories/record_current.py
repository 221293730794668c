"""Record a Tournament history under ``tournament-2026-12`` (CURRENT_PATCH: every earlier
patch at once, one marker): a pipelined quick run with its bootstrap, so a change to what such a
run schedules fails its replay.

.venv/bin/python -m tests.histories.record_current
"""

from __future__ import annotations

import asyncio
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


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    settings = load_settings(home=tempfile.mkdtemp())
    client = await connect(settings, env.client.service_client.config.target_host)
    queue = str(uuid.uuid4())
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            TOURNAMENT,
            TournamentInput(
                task="Sort a list.",
                profile="quick",
                seed=21,
                model="sim:default",
                rounds="pipelined",
            ),
            id="current-history",
            task_queue=queue,
            result_type=TournamentResult,
        )
        await handle.result()
        (OUT / "tournament-current.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
