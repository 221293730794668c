"""Hostile CEL in plans (docs/plans.md, "Expressions, ensure, iterate and set"), sent through the
real ``temporal`` binary to a real worker process: attribute probing, nested comprehensions over big
lists, a backtracking regex, and an expression that overruns its 2 s. Each run ends with its code
within bounds while a probe ``Ask`` on the same worker completes, the evaluator is replaced after
the overrun, and the worker still stops within 10 s of SIGTERM (the harness asserts it on leaving
the block).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker, temporal
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunResult


def _plan(name: str, *steps: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"schema": "ponder-plan/1", "name": name, **header, "steps": list(steps)}


def _set(expression: str) -> dict[str, Any]:
    return {"id": "v", "kind": "set", "set": {"v": expression}}


def _checked(expression: str) -> dict[str, Any]:
    """An agent whose output passes its contract and then meets ``expression`` as an ensure."""
    return {
        "id": "a", "kind": "agent", "prompt": "give v", "model": "sim:default", "out": "V",
        "ensure": [{"expr": expression}], "x-sim": {"outputs": ['{"v": 1}']},
    }  # fmt: skip


CONTRACTS = {"V": {"v": "integer"}}
HOSTILE: dict[str, tuple[dict[str, Any], str, str]] = {
    # id: (run input, the failure type, a part of its message)
    "cel-result-class": (
        {"plan": _plan("c1", _checked("result.__class__ == 'x'"), contracts=CONTRACTS)},
        "ensure-failed",
        "no such member in mapping: '__class__'",
    ),
    "cel-input-class": (
        {"plan": _plan("c2", _set("input.x.__class__")), "args": {"x": "text"}},
        "expr-failed",
        "does not support field selection",
    ),
    "cel-nested": (
        {
            "plan": _plan("c3", _set("input.items.all(x, input.items.all(y, x != y || true))")),
            "args": {"items": list(range(2000))},
        },
        "expr-failed",
        "over the 10,000 step meter",
    ),
    "cel-regex": (
        {
            "plan": _plan("c4", _checked("input.s.matches('(a*)*b')"), contracts=CONTRACTS),
            "args": {"s": "a" * 100_000},
        },
        "ensure-failed",
        "evaluated to false",
    ),
    "cel-overrun": (
        {
            # Each iteration compares two 20,000-item lists item by item (~40 ms), far under
            # the meter's count: only the 2 s bound stops it.
            "plan": _plan("c5", _set("input.l.exists(x, input.a == input.b)")),
            "args": {"a": [1] * 20_000, "b": [1] * 19_999 + [2], "l": list(range(300))},
        },
        "expr-failed",
        "over the 2 s evaluation bound",
    ),
}


async def test_hostile_expressions_end_coded_while_the_worker_serves(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        target = ["--address", server_address, "--namespace", "default"]
        for run_id, (run_input, _, _) in HOSTILE.items():
            path = tmp_path / f"{run_id}.json"
            path.write_text(dumps(run_input))  # 200 KB of args: too long for one argv
            code, output = await temporal(
                "workflow", "start", *target, "--task-queue", worker.queue, "--type", PLAN_RUN,
                "--workflow-id", run_id, "--input-file", str(path),
            )  # fmt: skip
            assert code == 0, output
        probe = asyncio.create_task(worker.probe())
        began = time.monotonic()
        for run_id, (_, reason, message) in HOSTILE.items():
            error = await worker.failure(run_id, within=90)
            assert error.type == reason, (run_id, error)
            assert message in error.message, (run_id, error.message)
        elapsed = time.monotonic() - began
        assert await probe < 10
        assert elapsed < 90
        # The overrun killed the evaluator; the next expression gets a fresh one.
        await worker.start(PLAN_RUN, "cel-after", dumps({"plan": _plan("c6", _set("1 + 1"))}))
        after = worker.client.get_workflow_handle("cel-after", result_type=PlanRunResult)
        result = await asyncio.wait_for(after.result(), 60)
        assert result.outputs["v"] == {"v": 2}
