"""Big fan-outs stay inside Temporal's limits, through the real ``temporal``
binary against a real worker process: a 10,000-item region is refused at start with
its codes and limits; a wide region extended from a budget pause runs in bounded batches. Each
test also proves the worker still serves a probe ``Ask`` within 10 s and exits within 10 s of
SIGTERM (``shared_worker``)."""

from __future__ import annotations

import asyncio

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from benchmarks.plan_fanout import region_plan
from tests.hostile.harness import dumps, shared_worker
from workflows.names import PLAN_RUN, QUERY_STATUS, UPDATE_EXTEND_BUDGET
from workflows.plan.limits import STARTS_PER_TASK
from workflows.plan.run_types import PlanRunResult, PlanStatus


async def test_the_ten_thousand_item_region_is_refused_at_start(
    client: Client, settings: Settings, server_address: str
) -> None:
    plan = region_plan(10_000, 10_000)
    plan["steps"][0]["fanout"]["max_fanout"] = 10_000
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(PLAN_RUN, "p-huge", dumps({"plan": plan}))
        await worker.probe()
        error = await worker.failure("p-huge", within=60)
        assert error.type == "plan-invalid"
        assert "[fanout.concurrency] concurrency=10000 is over the ceiling of 256" in error.message
        assert "[plan.too_large]" in error.message and "over 25,000" in error.message
        history = await worker.handle("p-huge").fetch_history()
        kinds = [e.event_type for e in history.events]
        assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in kinds  # nothing ran
        assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in kinds


async def test_extend_budget_on_a_wide_region_runs_in_bounded_batches(
    client: Client, settings: Settings, server_address: str
) -> None:
    items = 600
    # The budget fits the region but not the call spent before it, so the run pauses there.
    plan = region_plan(items, 256, calls=items)
    first = {"id": "first", "kind": "agent", "model": "sim:default", "prompt": "First."}
    plan["steps"] = [first, {**plan["steps"][0], "deps": ["first"]}, *plan["steps"][1:]]
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(PLAN_RUN, "p-wide", dumps({"plan": plan}))
        handle = client.get_workflow_handle("p-wide", result_type=PlanRunResult)
        async with asyncio.timeout(60):
            while True:
                try:
                    shown = await handle.query(QUERY_STATUS, result_type=PlanStatus)
                except Exception:  # not picked up yet
                    shown = None
                if shown is not None and shown.state == "awaiting_budget":
                    break
                await asyncio.sleep(0.2)
        extend = dumps({"calls": items + 1})
        code, output = await worker.update("p-wide", UPDATE_EXTEND_BUDGET, extend)
        assert code == 0, output
        await worker.probe()  # while the region's branches are being started and settled
        result = await asyncio.wait_for(handle.result(), 300)
        assert result.calls == items + 1
        history = await handle.fetch_history()
        per_task, scheduled = [0], 0
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled += 1
            elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                per_task.append(scheduled)
                scheduled = 0
        # The work a workflow task may do is bounded: a batch, and at most the trace write.
        # Whether that work also stays inside the deadlock detector's 2 s depends on the load
        # (it watches wall time), so benchmarks/plan_fanout measures it instead.
        assert max(per_task) <= STARTS_PER_TASK + 1
