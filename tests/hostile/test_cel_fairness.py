"""One run's costly expressions must cost that run, never another's: two plan runs whose set
steps are 64 expressions of ~0.25 s each (each under the 2 s bound, together far past a run's
20 s of evaluation), sent through the real ``temporal`` binary to a real worker process, and
then an innocent ``1 + 1``. The innocent run completes within 10 s (it waits for one costly
expression, not for the costly runs), the costly runs end ``expr-too-costly`` (or
``expr-failed`` if the machine is so loaded that one passes the 2 s bound), a probe ``Ask``
completes meanwhile, and the worker still stops within 10 s of SIGTERM (the harness asserts it
on leaving the block).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker, temporal
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunResult

# Each iteration compares two 20,000-item lists item by item (~40 ms), far under the meter.
COSTLY = "input.l.exists(x, input.a == input.b)"
ARGS = {"a": [1] * 20_000, "b": [1] * 19_999 + [2], "l": list(range(6))}


def _set(step_id: str, values: dict[str, str], *deps: str) -> dict[str, Any]:
    return {"id": step_id, "kind": "set", "set": values, "deps": list(deps)}


def _hog(name: str) -> dict[str, Any]:
    keys = {f"k{i}": COSTLY for i in range(64)}
    steps = [_set("s1", keys), _set("s2", keys, "s1"), _set("s3", keys, "s2")]
    return {"plan": {"schema": "ponder-plan/1", "name": name, "steps": steps}, "args": ARGS}


async def test_costly_runs_fail_themselves_and_never_starve_an_innocent_expression(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        target = ["--address", server_address, "--namespace", "default"]
        hogs = ["cel-hog-1", "cel-hog-2"]
        for run_id in hogs:
            path = tmp_path / f"{run_id}.json"
            path.write_text(dumps(_hog(run_id)))  # 200 KB of args: too long for one argv
            code, output = await temporal(
                "workflow", "start", *target, "--task-queue", worker.queue, "--type", PLAN_RUN,
                "--workflow-id", run_id, "--input-file", str(path),
            )  # fmt: skip
            assert code == 0, output
        # Both evaluators busy with the costly runs: a local activity under way leaves no event
        # in history to wait on, so this stays a wait (the assertions below check the order).
        await asyncio.sleep(4)
        probe = asyncio.create_task(worker.probe())
        began = time.monotonic()
        innocent = {
            "schema": "ponder-plan/1",
            "name": "innocent",
            "steps": [_set("v", {"v": "1 + 1"})],
        }
        await worker.start(PLAN_RUN, "cel-innocent", dumps({"plan": innocent}))
        handle = worker.client.get_workflow_handle("cel-innocent", result_type=PlanRunResult)
        result = await asyncio.wait_for(handle.result(), 60)
        assert result.outputs["v"] == {"v": 2}  # evaluated, never failed for another's cost
        # Fairness by order, not by a clock a loaded machine stretches: the innocent expression
        # was served while both costly runs were still evaluating theirs.
        for run_id in hogs:
            described = await worker.handle(run_id).describe()
            assert described.status == WorkflowExecutionStatus.RUNNING, (run_id, described.status)
        print(f"innocent run: {time.monotonic() - began:.1f} s")
        assert await probe < 10
        for run_id in hogs:
            error = await worker.failure(run_id, within=60)
            assert error.type in ("expr-too-costly", "expr-failed"), (run_id, error)
            if error.type == "expr-too-costly":
                assert "used its 20 s of expression evaluation" in error.message, error.message
            else:
                assert "over the 2 s evaluation bound" in error.message, error.message
