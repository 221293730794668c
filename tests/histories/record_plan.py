"""Record the PlanRun history the replay test replays: run when PlanRun changes on purpose.

.venv/bin/python -m tests.histories.record_plan

The run pauses for input (resumed by update), waits at a human gate (approved by signal, after a
refused stale token), pauses on its budget before a region (extended), and completes: a change
that breaks a paused plan's replay fails tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.names import (
    PLAN_RUN,
    QUERY_STATUS,
    SIGNAL_RESOLVE_GATE,
    UPDATE_EXTEND_BUDGET,
    UPDATE_RESUME,
)
from workflows.plan.run_types import (
    ExtendPlanBudgetInput,
    PlanRunInput,
    PlanRunResult,
    PlanStatus,
    ResolveGateInput,
    ResumeInput,
)

OUT = Path(__file__).parent
PLAN = {
    "schema": "ponder-plan/1",
    "name": "paused-history",
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


async def wait_for(handle: WorkflowHandle, state: str) -> PlanStatus:
    while True:
        status = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        if status.state == state:
            return status
        await asyncio.sleep(0.05)


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    settings = load_settings(home=tempfile.mkdtemp())
    client = await connect(settings, env.client.service_client.config.target_host)
    queue = str(uuid.uuid4())
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-paused-history",
            task_queue=queue,
            result_type=PlanRunResult,
        )
        await wait_for(handle, "awaiting_input")
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"owner": "ada"}))
        gate = await wait_for(handle, "awaiting_gate")
        stale = ResolveGateInput(step="ship", decision="approve", token="stale")
        await handle.signal(SIGNAL_RESOLVE_GATE, stale)
        token = gate.pending_gates[0].token
        await handle.signal(
            SIGNAL_RESOLVE_GATE, ResolveGateInput(step="ship", decision="approve", token=token)
        )
        await wait_for(handle, "awaiting_budget")
        await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3))
        await handle.result()
        (OUT / "plan-paused.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
