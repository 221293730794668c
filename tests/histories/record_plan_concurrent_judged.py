"""Record the PlanRun history of a plan whose model gate and tournament step may overlap: run
when that logic changes on purpose.

.venv/bin/python -m tests.histories.record_plan_concurrent_judged

A plan of ``concurrency: 3``: a draft, a model gate judging it (one failed verdict, then a redo
of the draft and a pass), a tournament step and an agent step beside them, and a step reading
the draft after the gate. With ``plan-concurrent-gates-tournaments`` the gate and the tournament
start beside the other steps: ``plan-concurrent-judged.json``. Runs recorded before the rule
walked a gate and a tournament alone (``plan-concurrent-subflows.json`` replays so).
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
    "name": "concurrent-judged-history",
    "concurrency": 3,
    "steps": [
        {"id": "w", "kind": "agent", "prompt": "Draft.", "model": "sim:default",
         "x-sim": {"outputs": ["draft one", "draft two"]}},
        {"id": "g", "kind": "gate", "prompt": "Judge ${steps.w.output}.", "model": "sim:default",
         "fail_route": "w", "max_redos": 1, "x-sim": {"outputs": ["GATE: FAIL", "GATE: PASS"]}},
        {"id": "best", "kind": "tournament", "prompt": "Write a haiku.", "model": "sim:default",
         "tournament": {"profile": "quick", "seed": 3}},
        {"id": "side", "kind": "agent", "prompt": "Aside.", "model": "sim:default"},
        {"id": "after", "kind": "agent", "prompt": "Use ${steps.w.output}.",
         "model": "sim:default"},
    ],
}  # fmt: skip


async def main(name: str) -> None:
    async with recording() as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id=name,  # replayed under the file's stem, from which a child's id derives
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        await handle.result()
        await save(handle, f"{name}.json")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "plan-concurrent-judged"))
