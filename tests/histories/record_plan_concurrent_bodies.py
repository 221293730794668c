"""Record the PlanRun history of a plan whose sub-flow body overlaps its children: run when that
logic changes on purpose.

.venv/bin/python -m tests.histories.record_plan_concurrent_bodies

A plan of ``concurrency: 2``: an agent step beside a ``run`` step whose body has two independent
agent children and a third reading both. With the concurrent bodies (``plan-concurrent-bodies``)
the body's first two children are dispatched together: ``plan-concurrent-bodies.json``. Runs
recorded before the rule walked a body one child at a time (``plan-concurrent-subflows.json``
replays so).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from tests.histories import recording, save
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "concurrent-bodies-history",
    "concurrency": 2,
    "flows": {"pair": {"steps": [
        {"id": "x", "kind": "agent", "prompt": "Left.", "model": "sim:default"},
        {"id": "y", "kind": "agent", "prompt": "Right.", "model": "sim:default"},
        {"id": "z", "kind": "agent", "prompt": "Join ${steps.x.output} ${steps.y.output}.",
         "model": "sim:default", "x-sim": {"outputs": ["joined"]}},
    ], "output": "${steps.z.output}"}},
    "steps": [
        {"id": "a", "kind": "agent", "prompt": "First.", "model": "sim:default"},
        {"id": "r", "kind": "run", "flow": "pair", "budget": {"calls": 3}},
        {"id": "b", "kind": "agent", "prompt": "Use ${steps.r.output}.", "model": "sim:default"},
    ],
}  # fmt: skip


async def main(name: str) -> None:
    async with recording() as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-concurrent-bodies-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        await handle.result()
        await save(handle, f"{name}.json")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "plan-concurrent-bodies"))
