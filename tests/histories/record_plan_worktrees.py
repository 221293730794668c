"""Record the PlanRun history of a worktree fan-out: run when that logic changes on purpose.

.venv/bin/python -m tests.histories.record_plan_worktrees

Two items run in their own worktrees of a small git repository (a command agent writes one file
each), their patches merge in item order and land on the workspace. A change to the commands a
worktree region emits (base, each item's add and finish, merge, land) fails
tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from activities.config import Endpoint, load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from tests.plans.test_run_worktrees import WRITER, fanout, make_repo
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult

OUT = Path(__file__).parent


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    home = Path(tempfile.mkdtemp())
    repo = make_repo(home / "repo")
    settings = load_settings(home=str(home))
    writer = Endpoint(kind="command", argv=[sys.executable, str(WRITER)])
    settings = settings.model_copy(
        update={"providers": {**settings.providers, "writer": writer}, "workspace_roots": [repo]}
    )
    client = await connect(settings, env.client.service_client.config.target_host)
    queue = str(uuid.uuid4())
    items = [{"write": {"a.txt": "A\n"}}, {"append": {"shared.txt": "9\n"}}]
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=fanout(items), workspace=str(repo)),
            id="plan-worktrees-history",
            task_queue=queue,
            result_type=PlanRunResult,
        )
        await handle.result()
        assert (repo / "a.txt").read_text() == "A\n"
        (OUT / "plan-worktrees.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
