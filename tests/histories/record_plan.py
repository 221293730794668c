"""Record the PlanRun history the replay test replays: run when PlanRun changes on purpose.

.venv/bin/python -m tests.histories.record_plan

The run pauses for input (resumed by update), waits at a human gate (approved by signal, after a
refused stale token), pauses on its budget before a region (extended), and completes: a change
that breaks a paused plan's replay fails tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.histories import recording, save, wait_for_state
from workflows.names import (
    PLAN_RUN,
    SIGNAL_RESOLVE_GATE,
    UPDATE_EXTEND_BUDGET,
    UPDATE_RESUME,
)
from workflows.plan.run_types import (
    ExtendPlanBudgetInput,
    PlanRunInput,
    PlanRunResult,
    ResolveGateInput,
    ResumeInput,
)

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "paused-history",
    # Two calls: the draft's, then the two-item fan-out finds one left and waits for more.
    "budget": {"calls": 2},
    "steps": [
        {"id": "ask", "kind": "pause", "pause": {"state": "AWAITING_OWNER", "resume_arg": "owner"}},
        {"id": "draft", "kind": "agent", "deps": ["ask"], "model": "sim:default",
         "prompt": "Draft for ${input.owner}."},
        {"id": "ship", "kind": "gate", "deps": ["draft"], "gate": {}},
        {"id": "fan", "kind": "fanout", "deps": ["ship"],
         "fanout": {"over": ["a", "b"], "chain": ["fan.one"], "join": "all"}},
        {"id": "fan.one", "kind": "agent", "model": "sim:default", "prompt": "One item."},
    ],
}  # fmt: skip


async def main() -> None:
    async with recording() as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-paused-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        await wait_for_state(handle, "awaiting_input")
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"owner": "ada"}))
        gate = await wait_for_state(handle, "awaiting_gate")
        stale = ResolveGateInput(step="ship", decision="approve", token="stale")
        await handle.signal(SIGNAL_RESOLVE_GATE, stale)
        token = gate.pending_gates[0].token
        await handle.signal(
            SIGNAL_RESOLVE_GATE, ResolveGateInput(step="ship", decision="approve", token=token)
        )
        await wait_for_state(handle, "awaiting_budget")
        await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3))
        await handle.result()
        await save(handle, "plan-paused.json")


if __name__ == "__main__":
    asyncio.run(main())
