"""Hostile sub-flows through the real ``temporal`` binary: a small document whose run steps
would expand into more boundaries than a plan may have is refused before it walks, and a
``with`` value nested past its bound is refused at validation (``flow.with_too_deep``); the worker
keeps serving."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import shared_worker
from workflows.names import PLAN_RUN


def expanding() -> dict[str, Any]:
    body = [{"id": f"s{k}", "kind": "agent", "prompt": "x", "model": "sim:default"}
            for k in range(1000)]  # fmt: skip
    calls = [{"id": f"r{k}", "kind": "run", "flow": "big"} for k in range(200)]
    return {"schema": "ponder-plan/1", "name": "expand", "flows": {"big": {"steps": body}},
            "steps": calls}  # fmt: skip


def deep_with() -> dict[str, Any]:
    value: Any = "${input.x}"
    for _ in range(40):
        value = [value]
    return {
        "schema": "ponder-plan/1",
        "name": "deep",
        "flows": {"f": {"steps": [{"id": "a", "kind": "agent", "prompt": "a",
                                   "model": "sim:default"}]}},
        "steps": [{"id": "r", "kind": "run", "flow": "f", "with": {"v": value}}],
    }  # fmt: skip


async def test_hostile_sub_flows_end_with_codes_while_the_worker_serves(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(PLAN_RUN, "h-expand", json.dumps({"plan": expanding()}))
        await worker.start(PLAN_RUN, "h-deep", json.dumps({"plan": deep_with(), "args": {"x": 1}}))
        probe = asyncio.create_task(worker.probe())
        expand, deep = await asyncio.gather(worker.failure("h-expand"), worker.failure("h-deep"))
        assert await probe < 10
    assert expand.type == "plan-invalid" and "flow.too_large" in expand.message
    assert "200200 steps" in expand.message
    assert deep.type == "plan-invalid" and "[flow.with_too_deep]" in deep.message
