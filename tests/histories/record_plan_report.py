"""Record a PlanRun history with the workspace-roots check and report.html writes (both patched
in): run when that part of PlanRun changes on purpose.

.venv/bin/python -m tests.histories.record_plan_report

The run names a workspace inside the worker's declared root (the preflight probe), pauses for
input (its report is written), waits at a human gate, and completes (the final report).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from activities.config import load_settings
from tests.histories import recording, save, wait_for_state
from tests.histories.record_plan import PLAN
from workflows.names import PLAN_RUN, UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.run_types import PlanRunInput, PlanRunResult, ResolveGateInput, ResumeInput

STEPS = [s for s in PLAN["steps"] if s["id"] in ("ask", "draft", "ship")]
REPORT_PLAN = {k: v for k, v in PLAN.items() if k != "budget"} | {
    "name": "report-history",
    "steps": STEPS,
}


async def main() -> None:
    root = Path(tempfile.mkdtemp())
    (root / "ws").mkdir()
    settings = load_settings(home=str(root / "home")).model_copy(
        update={"workspace_roots": [root], "config_file": None}
    )
    async with recording(settings) as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=REPORT_PLAN, workspace=str(root / "ws")),
            id="plan-report-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        await wait_for_state(handle, "awaiting_input")
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"owner": "ada"}))
        gate = await wait_for_state(handle, "awaiting_gate")
        token = gate.pending_gates[0].token
        decision = ResolveGateInput(step="ship", decision="approve", token=token)
        await handle.execute_update(UPDATE_RESOLVE_GATE, decision)
        await handle.result()
        await save(handle, "plan-report.json")


if __name__ == "__main__":
    asyncio.run(main())
