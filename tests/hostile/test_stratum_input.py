"""Hostile stratum flow documents (``version: 1``), sent through the real ``temporal`` binary to a
real worker process, which translates them inside the run's first workflow task: expressions
over the plan-wide ceiling, a syntax chain over the node bound, nesting past the depth bound,
a ``with`` nested 150 deep and 3,000 unclosed ``${`` in a prompt. Each run fails
``plan-invalid`` naming the stratum code and the author's path, while a probe ``Ask`` on the
same worker completes, and the worker stops within 10 s of SIGTERM (the harness asserts it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker, temporal
from workflows.names import PLAN_RUN


def _flow(*steps: dict[str, Any], **flows: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "contracts": {"R": {"value": "string"}},
        "flows": {
            "entry": "main",
            "main": {
                "input": {"name": "string"},
                "output": {"from": f"${{{steps[-1]['id']}.output}}", "contract": "R"},
                "steps": list(steps),
            },
            **flows,
        },
    }


def _checked(expression: str, **fields: Any) -> dict[str, Any]:
    return {"id": "a", "do": "x", "out": "R", "ensure": [{"expr": expression}]} | fields


def _nested(depth: int) -> Any:
    value: Any = "${input.name}"
    for _ in range(depth):
        value = [value]
    return value


CHILD = {
    "input": {"v": "string"},
    "output": {"from": "${c.output}", "contract": "R"},
    "steps": [{"id": "c", "do": "x", "out": "R"}],
}
HOSTILE: dict[str, tuple[dict[str, Any], str]] = {
    # id: (the document, a part of the failure's message)
    "st-many": (
        _flow(
            _checked(
                "true", ensure=[{"expr": f"len(result.value) > {n}" + " " * 900} for n in range(40)]
            )
        ),
        "[expr.too_complex]",
    ),
    "st-chain": (_flow(_checked("1" + " + 1" * 450)), "over 400 syntax nodes"),
    "st-deep": (_flow(_checked("!" * 500 + "true")), "nests deeper than 64"),
    "st-with": (
        _flow({"id": "s", "run": "child", "with": {"v": _nested(150)}}, child=CHILD),
        "flows.main.steps[0].with.v: [flow.with_too_deep]",
    ),
    "st-ref": (_flow(_checked("true", do="${" * 3000)), "[stratum.reference]"),
}


async def test_hostile_stratum_documents_are_refused_while_the_worker_serves(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        target = ["--address", server_address, "--namespace", "default"]
        for run_id, (doc, _) in HOSTILE.items():
            path = tmp_path / f"{run_id}.json"
            path.write_text(dumps({"plan": doc, "args": {"name": "n"}}))
            code, output = await temporal(
                "workflow", "start", *target, "--task-queue", worker.queue, "--type", PLAN_RUN,
                "--workflow-id", run_id, "--input-file", str(path),
            )  # fmt: skip
            assert code == 0, output
        probe = asyncio.create_task(worker.probe())
        for run_id, (_, message) in HOSTILE.items():
            error = await worker.failure(run_id, within=60)
            assert error.type == "plan-invalid", (run_id, error)
            assert message in error.message, (run_id, error.message)
            # Refused at once, read from history rather than a clock load stretches: the run
            # failed in its first workflow task, with nothing scheduled.
            kinds = [e.event_type for e in (await worker.handle(run_id).fetch_history()).events]
            assert kinds.count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) == 1, (run_id, kinds)
            assert kinds[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, (run_id, kinds)
            assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds, run_id
        assert await probe < 10
