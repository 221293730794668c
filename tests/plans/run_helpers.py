"""Shared helpers of the PlanRun tests: start a plan, wait for a state, read its trace."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from workflows.names import PLAN_RUN, QUERY_EVENTS, QUERY_STATUS
from workflows.plan.run_types import PlanEvent, PlanRunInput, PlanRunResult, PlanStatus


def plan_doc(*steps: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": header.pop("name", "test"),
        **header,
        "steps": list(steps),
    }


def agent(step_id: str, prompt: str, *outputs: str, **fields: Any) -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": step_id,
        "kind": "agent",
        "prompt": prompt,
        "model": "sim:default",
    }
    if outputs:
        step["x-sim"] = {"outputs": list(outputs)}
    return step | fields


async def start(client: Client, queue: str, plan: dict[str, Any], **fields: Any) -> WorkflowHandle:
    run_id = fields.pop("run_id", None) or f"p-{uuid.uuid4().hex[:10]}"
    return await client.start_workflow(
        PLAN_RUN,
        PlanRunInput(plan=plan, **fields),
        id=run_id,
        task_queue=queue,
        result_type=PlanRunResult,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
    )


async def run(client: Client, queue: str, plan: dict[str, Any], **fields: Any) -> PlanRunResult:
    result: PlanRunResult = await (await start(client, queue, plan, **fields)).result()
    return result


async def failure(
    client: Client, queue: str, plan: dict[str, Any], **fields: Any
) -> ApplicationError:
    return await ended_with(await start(client, queue, plan, **fields))


async def ended_with(handle: WorkflowHandle) -> ApplicationError:
    """The failure a started run ends with."""
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    cause = info.value.cause
    assert isinstance(cause, ApplicationError), cause
    return cause


async def status(handle: WorkflowHandle) -> PlanStatus:
    result: PlanStatus = await handle.query(QUERY_STATUS, result_type=PlanStatus)
    return result


async def wait_state(handle: WorkflowHandle, state: str, timeout: float = 60) -> PlanStatus:
    """The run's status once it is in ``state``; the ceiling is for a loaded machine (2 cores,
    ``-n 6``), where a plan's first steps alone have taken more than 20 s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        current = await status(handle)
        if current.state == state:
            return current
        assert loop.time() < deadline, f"still {current.state} ({current.error})"
        await asyncio.sleep(0.05)


async def events(handle: WorkflowHandle) -> list[PlanEvent]:
    result: list[PlanEvent] = await handle.query(QUERY_EVENTS, 0, result_type=list[PlanEvent])
    return result


def trace(runs_dir: Path, run_id: str) -> list[dict[str, Any]]:
    path = runs_dir / run_id / "trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]
