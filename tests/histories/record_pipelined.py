"""Record a pipelined Tournament history from before ``pipelined-lane-widths``: the run-wide
width (as wide as the widest role) binds while a judging phase overlaps the calls making its
candidates, so a replay that dropped the patch would schedule other calls. Recorded with the
code before the patch (a worktree of its parent commit); kept as it was.

.venv/bin/python -m tests.histories.record_pipelined
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
                model="sim:default,latency=lognormal:30,1",
                rounds="pipelined",
                concurrency={"generate": 1, "judge": 1, "mutate": 1},  # type: ignore[arg-type]
                bootstrap_resamples=0,
            ),
            id="pipelined-history",
            task_queue=queue,
            result_type=TournamentResult,
        )
        await handle.result()
        (OUT / "tournament-pipelined-shared.json").write_text(
            (await handle.fetch_history()).to_json()
        )
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
