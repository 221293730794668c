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
from pathlib import Path

from activities.config import Endpoint, load_settings
from tests.histories import recording, save
from tests.plans.test_run_worktrees import WRITER, fanout, make_repo
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult


async def main() -> None:
    home = Path(tempfile.mkdtemp())
    # Apart from the home: a workspace never overlaps ponder's own stores.
    repo = make_repo(Path(tempfile.mkdtemp()) / "repo")
    settings = load_settings(home=str(home))
    writer = Endpoint(kind="command", argv=[sys.executable, str(WRITER)])
    settings = settings.model_copy(
        update={"providers": {**settings.providers, "writer": writer}, "workspace_roots": [repo]}
    )
    items = [{"write": {"a.txt": "A\n"}}, {"append": {"shared.txt": "9\n"}}]
    async with recording(settings) as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=fanout(items), workspace=str(repo)),
            id="plan-worktrees-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        await handle.result()
        assert (repo / "a.txt").read_text() == "A\n"
        await save(handle, "plan-worktrees.json")


if __name__ == "__main__":
    asyncio.run(main())
