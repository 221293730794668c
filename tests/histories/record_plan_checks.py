"""Record the PlanRun history with expressions the replay test replays: run when PlanRun changes
on purpose.

.venv/bin/python -m tests.histories.record_plan_checks

The run evaluates a set step (a local-activity marker), retries an agent step whose ensure
expression failed, pays a judge, probes a file, iterates until a condition holds and completes:
a change that breaks the replay of a run with expressions fails tests/test_replay.py.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from activities.config import load_settings
from tests.histories import recording, save
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult

PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "checks-history",
    "contracts": {"S": {"score": "number"}},
    "steps": [
        {"id": "cfg", "kind": "set", "set": {"goal": "double(input.goal)", "name": "'notes.md'"}},
        {"id": "rate", "kind": "agent", "deps": ["cfg"], "model": "sim:default", "out": "S",
         "prompt": "Rate it.", "idempotent": True,
         "retry": {"max_attempts": 2, "on": ["ensure-failed"]},
         "ensure": [{"expr": 'result.score >= steps["cfg"].goal'},
                    {"file_exists": "notes.md"},
                    {"judged": {"statement": "the rating is honest"}}],
         "x-sim": {"outputs": ['{"score": 0.1}', '{"score": 0.9}'],
                   "judged": ["Honest.\nGATE: PASS"]}},
        {"id": "grow", "kind": "agent", "deps": ["rate"], "model": "sim:default", "out": "S",
         "prompt": "Improve it.", "iterate": {"max": 3, "until": "result.score > 1"},
         "x-sim": {"outputs": ['{"score": 1}', '{"score": 2}']}},
    ],
}  # fmt: skip


async def main() -> None:
    settings = load_settings(home=tempfile.mkdtemp())
    workspace = Path(tempfile.mkdtemp())
    (workspace / "notes.md").write_text("notes\n")
    settings = settings.model_copy(update={"workspace_roots": [str(workspace)]})
    async with recording(settings) as rec:
        handle = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN, args={"goal": "0.5"}, workspace=str(workspace)),
            id="plan-checks-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        await handle.result()
        await save(handle, "plan-checks.json")


if __name__ == "__main__":
    asyncio.run(main())
