"""Record the PlanRun history of a plan with nested ledgers: run when that logic changes on purpose.

.venv/bin/python -m tests.histories.record_plan_nested_ledgers

A sub-flow of calls=2 holds a one-call child and a child of two attempts (the second child's
first attempt succeeds); a one-call step is revised once at a human gate, then approved. With
the nested-ledger rules (``plan-nested-ledgers-per-dispatch``) the sub-flow reserves per dispatch
and the revise renews the step's ledger, so the run completes: ``plan-nested-ledgers.json``.

``plan-nested-ledgers-before.json`` is the same plan recorded before those rules (this script
with the patch not asked): the sub-flow's second child was refused ``subflow-budget-exhausted``
and routed to ``recover``, and the revise failed the run ``step-budget-exhausted``. It is kept
so a run started before the rules still replays with them; it cannot be recorded again.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle

from tests.histories import recording, save
from workflows.names import PLAN_RUN, QUERY_STATUS, UPDATE_RESOLVE_GATE
from workflows.plan.run_types import PlanRunInput, PlanRunResult, PlanStatus, ResolveGateInput

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "nested-ledgers-history",
    "budget": {"calls": 8},
    "contracts": {"Found": {"items": "string[]"}},
    "flows": {"two": {"steps": [
        {"id": "a", "kind": "agent", "prompt": "First.", "model": "sim:default"},
        {"id": "b", "kind": "agent", "prompt": "Second.", "model": "sim:default", "out": "Found",
         "idempotent": True, "retry": {"max_attempts": 2, "on": ["malformed-output"]},
         "x-sim": {"outputs": ['{"items": ["x"]}']}},
    ]}},
    "steps": [
        {"id": "r", "kind": "run", "flow": "two", "budget": {"calls": 2}, "on_fail": "recover"},
        {"id": "recover", "kind": "agent", "prompt": "Recover.", "model": "sim:default"},
        {"id": "draft", "kind": "agent", "prompt": "Draft.", "model": "sim:default",
         "budget": {"calls": 1}, "x-sim": {"outputs": ["first draft", "second draft"]}},
        {"id": "g", "kind": "gate", "deps": ["draft"],
         "gate": {"on_revise": "draft", "max_rounds": 1}},
    ],
}  # fmt: skip


async def decide(handle: WorkflowHandle, decision: str, after: str | None) -> str | None:
    """Decide the gate once it is open with a new token; None when the run ended first."""
    while True:
        status = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        if status.state in ("completed", "failed"):
            return None
        gates = status.pending_gates
        if status.state == "awaiting_gate" and gates and gates[0].token != after:
            break
        await asyncio.sleep(0.05)
    token = gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="g", decision=decision, token=token)
    )
    return token


async def main(name: str) -> None:
    async with recording() as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-nested-ledgers-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        first = await decide(handle, "revise", None)
        await decide(handle, "approve", first)
        with contextlib.suppress(WorkflowFailureError):  # before the rules the revise fails it
            await handle.result()
        await save(handle, f"{name}.json")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "plan-nested-ledgers"))
