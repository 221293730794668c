"""Record the PlanRun history of a plan whose ``run`` step may overlap: run when that logic
changes on purpose.

.venv/bin/python -m tests.histories.record_plan_concurrent_subflows

A plan of ``concurrency: 2``: an agent step, a ``run`` step whose body waits at a human gate
(approved) before its one agent child, and a step reading the sub-flow's output. With the
concurrent sub-flows (``plan-concurrent-subflows``) the run step starts beside the first step:
``plan-concurrent-subflows.json``.

``plan-concurrent-subflows-before.json`` is the same plan recorded before that rule (the run
step walked alone, after everything before it); it is kept so a run started then still
replays, and cannot be recorded again.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN, QUERY_STATUS, UPDATE_RESOLVE_GATE
from workflows.plan.run_types import PlanRunInput, PlanRunResult, PlanStatus, ResolveGateInput

OUT = Path(__file__).parent
PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "concurrent-subflows-history",
    "concurrency": 2,
    "flows": {"gated": {"steps": [
        {"id": "g", "kind": "gate", "gate": {}},
        {"id": "w", "kind": "agent", "prompt": "Write.", "model": "sim:default",
         "x-sim": {"outputs": ["written"]}},
    ], "output": "${steps.w.output}"}},
    "steps": [
        {"id": "a", "kind": "agent", "prompt": "First.", "model": "sim:default"},
        {"id": "r", "kind": "run", "flow": "gated"},
        {"id": "b", "kind": "agent", "prompt": "Use ${steps.r.output}.", "model": "sim:default"},
    ],
}  # fmt: skip


async def approve(handle: WorkflowHandle) -> None:
    while True:
        status = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        if status.state == "awaiting_gate" and status.pending_gates:
            break
        await asyncio.sleep(0.05)
    gate = status.pending_gates[0]
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step=gate.step, decision="approve", token=gate.token)
    )


async def main(name: str) -> None:
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
            id="plan-concurrent-subflows-history",
            task_queue=queue,
            result_type=PlanRunResult,
        )
        await approve(handle)
        await handle.result()
        (OUT / f"{name}.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "plan-concurrent-subflows"))
