"""Record the PlanRun history of gates waiting on deadlines: run when that logic changes on purpose.

.venv/bin/python -m tests.histories.record_plan_deadline

The run waits at a gate with a deadline and an escalation: the escalation timer fires and posts
to a notifier (a local HTTP server), then the deadline fires and the default approves. A second
timed gate is decided early by update (its timer cancelled), and an agent step runs. A change
that breaks the replay of a run waiting on a gate deadline fails tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from temporalio.client import WorkflowHandle

from activities.config import Notifier, load_settings
from tests.fakes import FakeProvider, Reply
from tests.histories import recording, save
from workflows.names import PLAN_RUN, QUERY_STATUS, UPDATE_RESOLVE_GATE
from workflows.plan.run_types import PlanRunInput, PlanRunResult, PlanStatus, ResolveGateInput

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "deadline-history",
    "steps": [
        {"id": "draft", "kind": "agent", "model": "sim:default", "prompt": "Draft it."},
        {"id": "ship", "kind": "gate", "deps": ["draft"],
         "gate": {"deadline": 2000, "default": "approve",
                  "escalate": {"after_ms": 1000, "notify": "ops"}}},
        {"id": "confirm", "kind": "gate", "deps": ["ship"],
         "gate": {"deadline": 600000, "default": "kill"}},
        {"id": "notes", "kind": "agent", "deps": ["confirm"], "model": "sim:default",
         "prompt": "Release notes."},
    ],
}  # fmt: skip


async def wait_for(handle: WorkflowHandle, step: str) -> PlanStatus:
    while True:
        status = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        if status.state == "awaiting_gate" and status.step == step:
            return status
        await asyncio.sleep(0.05)


async def main() -> None:
    hook = FakeProvider(lambda seen: Reply(status=204, body={}))
    settings = load_settings(home=tempfile.mkdtemp())
    settings = settings.model_copy(
        update={"notifiers": {"ops": Notifier(kind="webhook", url=f"{hook.url}/hook")}}
    )
    async with recording(settings) as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-gate-deadline-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        confirm = await wait_for(handle, "confirm")
        token = confirm.pending_gates[0].token
        decision = ResolveGateInput(step="confirm", decision="approve", token=token)
        await handle.execute_update(UPDATE_RESOLVE_GATE, decision)
        await handle.result()
        assert len(hook.seen) == 1, hook.seen
        await save(handle, "plan-gate-deadline.json")
    hook.close()


if __name__ == "__main__":
    asyncio.run(main())
