"""Record the PlanRun history of a run awaiting a consumer: run when that logic changes on purpose.

.venv/bin/python -m tests.histories.record_plan_consumer

A consumer step is issued and answered twice (a failure, retried with a new token, then an
output by update); its checkpoint commits; a two-item fan-out of consumer members is answered
by signal (one refused first); at the human gate the run is reverted to the checkpoint (the
fan-out is issued again), answered again, and approved. A change that breaks the replay of a
run waiting for a consumer, or of a revert, fails tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import WorkflowHandle

from tests.histories import recording, save, wait_for_state
from workflows.names import (
    PLAN_RUN,
    QUERY_STATUS,
    SIGNAL_STEP_DONE,
    UPDATE_RESOLVE_GATE,
    UPDATE_REVERT,
    UPDATE_STEP_DONE,
)
from workflows.plan.checkpoints import RevertInput
from workflows.plan.consumer import StepDoneInput
from workflows.plan.run_types import PlanRunInput, PlanRunResult, PlanStatus, ResolveGateInput

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "consumer-history",
    "budget": {"calls": 12},
    "steps": [
        {"id": "build", "kind": "agent", "prompt": "Build it.", "dispatch": "consumer",
         "idempotent": True, "retry": {"max_attempts": 2, "on": ["transport"]},
         "checkpoint": "built"},
        {"id": "fan", "kind": "fanout", "deps": ["build"],
         "fanout": {"over": ["a", "b"], "chain": ["fan.do"], "concurrency": 2}},
        {"id": "fan.do", "kind": "agent", "prompt": "Do the item.", "dispatch": "consumer"},
        {"id": "ship", "kind": "gate", "deps": ["fan"], "gate": {}},
        {"id": "notes", "kind": "agent", "deps": ["ship"], "model": "sim:default",
         "prompt": "Notes."},
    ],
}  # fmt: skip


async def issued(handle: WorkflowHandle, count: int, seen: set[str]) -> PlanStatus:
    while True:
        status = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        fresh = [i for i in status.issuances if i.token not in seen]
        if status.state == "awaiting_consumer" and len(fresh) >= count:
            seen.update(i.token for i in fresh)
            return status
        await asyncio.sleep(0.05)


async def answer_fanout(handle: WorkflowHandle, seen: set[str]) -> None:
    status = await issued(handle, 2, seen)
    for i in status.issuances:
        if i.item == 0:
            bad = StepDoneInput(step="fan.do", token=i.token, result={"output": 1, "failure": "x"})
            await handle.signal(SIGNAL_STEP_DONE, bad)
        done = StepDoneInput(step="fan.do", token=i.token, result={"output": f"item {i.item}"})
        await handle.signal(SIGNAL_STEP_DONE, done)


async def main() -> None:
    seen: set[str] = set()
    async with recording() as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-consumer-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        first = (await issued(handle, 1, seen)).issuances[0]
        failed = StepDoneInput(step="build", token=first.token, result={"failure": "crashed"})
        await handle.execute_update(UPDATE_STEP_DONE, failed)
        second = (await issued(handle, 1, seen)).issuances[0]
        built = StepDoneInput(
            step="build", token=second.token, result={"output": "built", "usage": {"tokens": 9}}
        )
        await handle.execute_update(UPDATE_STEP_DONE, built, id=f"step_done:{second.token}")
        await answer_fanout(handle, seen)
        await wait_for_state(handle, "awaiting_gate")
        await handle.execute_update(UPDATE_REVERT, RevertInput(label="built"))
        await answer_fanout(handle, seen)
        gate = await wait_for_state(handle, "awaiting_gate")
        token = gate.pending_gates[0].token
        approve = ResolveGateInput(step="ship", decision="approve", token=token)
        await handle.execute_update(UPDATE_RESOLVE_GATE, approve)
        await handle.result()
        await save(handle, "plan-consumer.json")


if __name__ == "__main__":
    asyncio.run(main())
