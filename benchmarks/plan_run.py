"""What a plan costs to orchestrate: a 200-step linear plan and a 500-item region on ``sim``.

On a fresh embedded server (its own SQLite file in a temporary ``$PONDER_HOME``) the real worker
runs ``PlanRun``; a benchmark-only workflow awaits the same number of bare ``call_model``
activities one after another, so "overhead per step" is what the plan interpreter adds
(reservations, trace, references, state) beyond the activity itself. Measures, never asserts.

    python -m benchmarks.plan_run [--steps 200] [--items 500]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import workflow

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

with workflow.unsafe.imports_passed_through():
    import httpx
    from temporalio.client import Client, WorkflowHandle
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker

    from activities.call_model import ModelActivities
    from activities.config import load_settings
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from worker.worker import WorkerOptions, running_worker
    from workflows.call_options import CallOptions
    from workflows.model_calls import call_model
    from workflows.model_types import CallModelInput, ModelRequest
    from workflows.names import PLAN_RUN
    from workflows.plan.run_types import PlanRunInput, PlanRunResult

MODEL = "sim:default"


@dataclass
class BareInput:
    run_id: str
    calls: int


@workflow.defn(name="BenchBarePlanCalls")
class BareCalls:
    @workflow.run
    async def run(self, input: BareInput) -> int:
        for index in range(input.calls):
            request = ModelRequest(model=MODEL, prompt=f"step {index}", role="plan")
            call = CallModelInput(run_id=input.run_id, phase="bench", index=index, request=request)
            await call_model(call, CallOptions())
        return input.calls


def linear_plan(steps: int) -> dict[str, Any]:
    out: list[dict[str, Any]] = [{"id": "s0", "kind": "agent", "model": MODEL, "prompt": "Start."}]
    for i in range(1, steps):
        out.append(
            {
                "id": f"s{i}",
                "kind": "agent",
                "deps": [f"s{i - 1}"],
                "model": MODEL,
                "prompt": f"Step {i}.",
            }
        )
    return {"schema": "ponder-plan/1", "name": f"linear-{steps}", "steps": out}


def region_plan(items: int) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": f"region-{items}",
        "budget": {"calls": items},
        "steps": [
            {
                "id": "fan",
                "kind": "fanout",
                "fanout": {"over": list(range(items)), "chain": ["fan.one"], "concurrency": 32},
            },
            {"id": "fan.one", "kind": "agent", "model": MODEL, "prompt": "One item."},
        ],
    }


async def history_of(handle: WorkflowHandle) -> tuple[int, int]:
    history = await handle.fetch_history()
    return len(history.events), sum(e.ByteSize() for e in history.events)


async def timed(
    client: Client, queue: str, name: str, arg: Any, result_type: type
) -> tuple[float, int, int]:
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    if isinstance(arg, PlanRunInput):
        arg = arg.model_copy(update={"run_id": run_id})
    elif isinstance(arg, BareInput):
        arg.run_id = run_id
    started = time.perf_counter()
    handle = await client.start_workflow(
        name, arg, id=run_id, task_queue=queue, result_type=result_type
    )
    await handle.result()
    seconds = time.perf_counter() - started
    events, size = await history_of(handle)
    return seconds, events, size


async def main(steps: int, items: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="ponder-bench-"))
    settings = load_settings(home=str(home))
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    async with EmbeddedServer(home).lease() as info:
        client = await connect(settings, info.address)
        queue = f"bench-{uuid.uuid4()}"
        http = httpx.AsyncClient(timeout=None)
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)) as workers:
            # The baseline is defined here, in a script the sandbox would re-import: unsandboxed.
            async with Worker(
                client,
                task_queue=f"{queue}-bare",
                workflows=[BareCalls],
                activities=[ModelActivities(settings, http).call_model],
                workflow_runner=UnsandboxedWorkflowRunner(),
            ):
                warm = PlanRunInput(plan=linear_plan(5))
                await timed(client, queue, PLAN_RUN, warm, PlanRunResult)
                bare = await timed(
                    client, f"{queue}-bare", "BenchBarePlanCalls", BareInput("", steps), int
                )
                linear = await timed(
                    client, queue, PLAN_RUN, PlanRunInput(plan=linear_plan(steps)), PlanRunResult
                )
                region = await timed(
                    client, queue, PLAN_RUN, PlanRunInput(plan=region_plan(items)), PlanRunResult
                )
            del workers
        await http.aclose()
    rows = [
        (f"bare call_model x{steps}", steps, bare),
        (f"PlanRun linear {steps} steps", steps, linear),
        (f"PlanRun region {items} items (32 lanes)", items, region),
    ]
    print(
        f"{'run':<38} {'wall s':>8} {'ms/step':>8} {'events':>7} {'ev/step':>8} {'bytes/step':>10}"
    )
    for label, n, (seconds, events, size) in rows:
        print(
            f"{label:<38} {seconds:>8.2f} {seconds * 1000 / n:>8.1f} {events:>7} "
            f"{events / n:>8.1f} {size / n:>10.0f}"
        )
    overhead = (linear[0] - bare[0]) * 1000 / steps
    print(f"orchestration overhead per linear step beyond a bare activity: {overhead:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--items", type=int, default=500)
    options = parser.parse_args()
    asyncio.run(main(options.steps, options.items))
