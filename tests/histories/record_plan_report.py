"""Record a PlanRun history with the workspace-roots check and report.html writes (both patched
in): run when that part of PlanRun changes on purpose.

.venv/bin/python -m tests.histories.record_plan_report

The run names a workspace inside the worker's declared root (the preflight probe), pauses for
input (its report is written), waits at a human gate, and completes (the final report).
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from tests.histories.record_plan import OUT, PLAN, wait_for
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN, UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.run_types import PlanRunInput, PlanRunResult, ResolveGateInput, ResumeInput

STEPS = [s for s in PLAN["steps"] if s["id"] in ("ask", "draft", "ship")]  # type: ignore[index]


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    root = Path(tempfile.mkdtemp())
    (root / "ws").mkdir()
    settings = load_settings(home=str(root / "home")).model_copy(
        update={"workspace_roots": [root], "config_file": None}
    )
    client = await connect(settings, env.client.service_client.config.target_host)
    queue = str(uuid.uuid4())
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan={**PLAN, "name": "report-history", "steps": STEPS},
                         workspace=str(root / "ws")),
            id="plan-report-history",
            task_queue=queue,
            result_type=PlanRunResult,
        )  # fmt: skip
        await wait_for(handle, "awaiting_input")
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"owner": "ada"}))
        gate = await wait_for(handle, "awaiting_gate")
        token = gate.pending_gates[0].token
        decision = ResolveGateInput(step="ship", decision="approve", token=token)
        await handle.execute_update(UPDATE_RESOLVE_GATE, decision)
        await handle.result()
        (OUT / "plan-report.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
