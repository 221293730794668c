"""Hostile conditions and concurrency through the real ``temporal`` binary: a ``when`` that is
not text is refused at validation, one that is not a boolean fails its run ``expr-failed``, and
a plan that puts a hundred steps in flight at once completes while a probe ``Ask`` on the same
worker is still answered in time; the worker keeps serving and exits on SIGTERM."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import shared_worker
from workflows.names import PLAN_RUN


def plan(*steps: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"schema": "ponder-plan/1", "name": "hostile", **header, "steps": list(steps)}


def step(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "kind": "agent", "prompt": "x", "model": "sim:default", **fields}


async def test_hostile_conditions_and_a_wide_overlap_end_while_the_worker_serves(
    client: Client, settings: Settings, server_address: str
) -> None:
    wide = plan(*(step(f"s{k}") for k in range(100)), concurrency=256)
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(PLAN_RUN, "h-when-type", json.dumps({"plan": plan(step("a", when=1))}))
        await worker.start(
            PLAN_RUN, "h-when-map", json.dumps({"plan": plan(step("a", when="input"))})
        )
        await worker.start(PLAN_RUN, "h-wide", json.dumps({"plan": wide}))
        probe = asyncio.create_task(worker.probe())
        typed, mapped = await asyncio.gather(
            worker.failure("h-when-type"), worker.failure("h-when-map")
        )
        handle = client.get_workflow_handle("h-wide")
        result = await asyncio.wait_for(handle.result(), 120)
        assert await probe < 10
    assert typed.type == "plan-invalid" and "steps[0].when" in typed.message
    assert mapped.type == "expr-failed" and "a.when" in mapped.message
    assert len(result["outputs"]) == 100
