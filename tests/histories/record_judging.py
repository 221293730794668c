"""Record a Tournament history with issue 17's judging patched in: both orders, a judge panel,
the sparse adaptive opening with champion pairs, and the final scores' bootstrap. Run when
that part of the Tournament changes on purpose.

.venv/bin/python -m tests.histories.record_judging
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
                seed=17,
                schedule="adaptive",
                judge_orders="both",
                judges=["sim:default,accuracy=0.9", "sim:default,position_bias=0.3"],
                bootstrap_resamples=200,
            ),
            id="judging-history",
            task_queue=queue,
            result_type=TournamentResult,
        )
        await handle.result()
        (OUT / "tournament-judging.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
