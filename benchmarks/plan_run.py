"""What a plan costs to orchestrate: a 200-step linear plan and a 500-item region on ``sim``,
the same linear plan with an ``ensure`` expression on every step (what one ``evaluate_cel``
local activity adds to a step), and a part-2 plan of the same number of model calls: units of
an agent step with an ``ensure`` and an ``iterate`` (``until`` holding at once) and a ``run``
step whose sub-flow computes a value (a ``set`` child) and asks a model with it (an agent
child), so per model call: three expressions, one sub-flow and one set step besides the call.

On a fresh embedded server (its own SQLite file in a temporary ``$PONDER_HOME``) the real worker
runs ``PlanRun``; the baseline (``bare_calls``) awaits the same number of bare ``call_model``
activities one after another (or 32 at a time, against the region) in the same workflow
sandbox, so "overhead per step" is what the plan interpreter adds (reservations, trace,
references, state) beyond the activity itself, not what the sandbox costs every workflow.
``--unsandboxed-baseline`` adds the sequential baseline without the sandbox, which is how
session 2 measured it.

The machine this runs on is shared and noisy, so every figure is the median of ``--rounds``
interleaved rounds (baseline, linear, fan-out, region, baseline, ...), and the worker's CPU per
step (``time.process_time`` of this process, which hosts the worker) is printed beside the wall
time: it is far steadier than the wall clock. Measures, never asserts.

    python -m benchmarks.plan_run [--steps 200] [--items 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
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
    from benchmarks.bare_calls import BARE_CALLS, MODEL, BareCalls, BareInput
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from worker.worker import WorkerOptions, running_worker
    from workflows.names import PLAN_RUN
    from workflows.plan.run_types import PlanRunInput, PlanRunResult


LANES = 32
"""A region's concurrency, and the bare fan-out's."""


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


def checked_plan(steps: int) -> dict[str, Any]:
    """The linear plan with a CEL ensure on every step (one evaluate_cel marker each)."""
    plan = linear_plan(steps)
    for step in plan["steps"]:
        step["ensure"] = [{"expr": "size(result) > 0 && !result.startsWith('error')"}]
    return {**plan, "name": f"checked-{steps}"}


def part2_plan(calls: int) -> dict[str, Any]:
    """``calls // 2`` units of an ensured, iterating agent step and a sub-flow call (a set
    child and an agent child): ``calls`` model calls (one less when odd)."""
    out: list[dict[str, Any]] = []
    for k in range(max(1, calls // 2)):
        deps = [f"r{k - 1}"] if k else []
        out.append(
            {"id": f"a{k}", "kind": "agent", "deps": deps, "model": MODEL, "prompt": f"Unit {k}.",
             "ensure": [{"expr": "size(result) > 0"}],
             "iterate": {"max": 3, "until": "!result.startsWith('error')"}}
        )  # fmt: skip
        out.append(
            {"id": f"r{k}", "kind": "run", "deps": [f"a{k}"], "flow": "polish",
             "with": {"text": f"${{steps.a{k}.output}}"}}
        )  # fmt: skip
    body = [
        {"id": "measure", "kind": "set", "set": {"chars": "size(input.text)"}},
        {"id": "edit", "kind": "agent", "deps": ["measure"], "model": MODEL,
         "prompt": "Tighten ${steps.measure.output.chars} characters."},
    ]  # fmt: skip
    return {
        "schema": "ponder-plan/1",
        "name": f"part2-{calls}",
        "flows": {"polish": {"input": {"text": "string"}, "steps": body}},
        "steps": out,
    }


def part2_calls(calls: int) -> int:
    return 2 * max(1, calls // 2)


def region_plan(items: int) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": f"region-{items}",
        "budget": {"calls": items},
        "steps": [
            {
                "id": "fan",
                "kind": "fanout",
                "fanout": {"over": list(range(items)), "chain": ["fan.one"], "concurrency": LANES},
            },
            {"id": "fan.one", "kind": "agent", "model": MODEL, "prompt": "One item."},
        ],
    }


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    events: int
    size: int


@dataclass
class Row:
    label: str
    n: int
    samples: list[Sample] = field(default_factory=list)

    def median(self, pick: str) -> float:
        return statistics.median(getattr(s, pick) for s in self.samples)


async def history_of(handle: WorkflowHandle) -> tuple[int, int]:
    history = await handle.fetch_history()
    return len(history.events), sum(e.ByteSize() for e in history.events)


async def timed(client: Client, queue: str, name: str, arg: Any, result_type: type) -> Sample:
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    if isinstance(arg, PlanRunInput):
        arg = arg.model_copy(update={"run_id": run_id})
    elif isinstance(arg, BareInput):
        arg = BareInput(run_id, arg.calls, arg.lanes)
    started, cpu = time.perf_counter(), time.process_time()
    handle = await client.start_workflow(
        name, arg, id=run_id, task_queue=queue, result_type=result_type
    )
    await handle.result()
    seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    events, size = await history_of(handle)
    return Sample(seconds, cpu_s, events, size)


async def main(steps: int, items: int, rounds: int, unsandboxed: bool) -> None:
    home = Path(tempfile.mkdtemp(prefix="ponder-bench-"))
    settings = load_settings(home=str(home))
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    rows = {
        "bare": Row(f"bare call_model x{steps}", steps),
        "bare-u": Row(f"bare call_model x{steps}, unsandboxed", steps),
        "linear": Row(f"PlanRun linear {steps} steps", steps),
        "checked": Row(f"PlanRun linear {steps}, an ensure each", steps),
        "part2": Row(f"PlanRun part 2, {part2_calls(steps)} calls", part2_calls(steps)),
        "bare-fan": Row(f"bare call_model x{items}, {LANES} lanes", items),
        "region": Row(f"PlanRun region {items} items ({LANES} lanes)", items),
    }
    async with EmbeddedServer(home).lease() as info:
        client = await connect(settings, info.address)
        queue = f"bench-{uuid.uuid4()}"
        http = httpx.AsyncClient(timeout=None)
        model = ModelActivities(settings, http)
        async with (
            running_worker(client, settings, WorkerOptions(task_queue=queue)),
            Worker(
                client,
                task_queue=f"{queue}-bare",
                workflows=[BareCalls],
                activities=[model.call_model],
            ),
            Worker(
                client,
                task_queue=f"{queue}-bare-u",
                workflows=[BareCalls],
                activities=[model.call_model],
                workflow_runner=UnsandboxedWorkflowRunner(),
            ),
        ):
            runs: dict[str, tuple[str, str, Any, type]] = {
                "bare": (f"{queue}-bare", BARE_CALLS, BareInput("", steps), int),
                "bare-u": (f"{queue}-bare-u", BARE_CALLS, BareInput("", steps), int),
                "linear": (queue, PLAN_RUN, PlanRunInput(plan=linear_plan(steps)), PlanRunResult),
                "checked": (queue, PLAN_RUN, PlanRunInput(plan=checked_plan(steps)), PlanRunResult),
                "part2": (queue, PLAN_RUN, PlanRunInput(plan=part2_plan(steps)), PlanRunResult),
                "bare-fan": (f"{queue}-bare", BARE_CALLS, BareInput("", items, LANES), int),
                "region": (queue, PLAN_RUN, PlanRunInput(plan=region_plan(items)), PlanRunResult),
            }
            if not unsandboxed:
                del runs["bare-u"], rows["bare-u"]
            # Warm every path once (imports, sandbox, caches) before anything is timed.
            for queue_name, name, _, result_type in runs.values():
                warm = BareInput("", 5) if name == BARE_CALLS else PlanRunInput(plan=linear_plan(5))
                await timed(client, queue_name, name, warm, result_type)
            for r in range(rounds):
                for key, (queue_name, name, arg, result_type) in runs.items():
                    sample = await timed(client, queue_name, name, arg, result_type)
                    rows[key].samples.append(sample)
                    per = sample.wall_s * 1000 / rows[key].n
                    print(f"  round {r + 1}: {key:<7} {per:7.1f} ms/step", flush=True)
        await http.aclose()
    print(
        f"\nmedians of {rounds} round(s)\n{'run':<42} {'wall s':>7} {'ms/step':>8} "
        f"{'cpu ms/step':>11} {'ev/step':>8} {'bytes/step':>10}"
    )
    for row in rows.values():
        n = row.n
        print(
            f"{row.label:<42} {row.median('wall_s'):>7.2f} {row.median('wall_s') * 1000 / n:>8.1f} "
            f"{row.median('cpu_s') * 1000 / n:>11.2f} {row.median('events') / n:>8.2f} "
            f"{row.median('size') / n:>10.0f}"
        )
    bare, linear = rows["bare"], rows["linear"]
    pairs = zip(linear.samples, bare.samples, strict=True)
    paired = [(lin.wall_s - b.wall_s) * 1000 / steps for lin, b in pairs]
    step_cpu = cpu = (linear.median("cpu_s") - bare.median("cpu_s")) * 1000 / steps
    step_wall = statistics.median(paired)
    print(
        "orchestration overhead per linear step beyond a bare activity (same sandbox): "
        f"wall {step_wall:.1f} ms (rounds: "
        f"{', '.join(f'{p:.1f}' for p in paired)}), worker CPU {cpu:.2f} ms"
    )
    checked = rows["checked"]
    pairs = zip(checked.samples, linear.samples, strict=True)
    paired = [(c.wall_s - lin.wall_s) * 1000 / steps for c, lin in pairs]
    cpu = (checked.median("cpu_s") - linear.median("cpu_s")) * 1000 / steps
    extra = (checked.median("events") - linear.median("events")) / steps
    print(
        "an ensure expression per step (one evaluate_cel local activity in the worker's CEL "
        f"process): wall {statistics.median(paired):.1f} ms, worker CPU {cpu:.2f} ms, "
        f"{extra:.2f} history events"
    )
    part2 = rows["part2"]
    per_bare = [b.wall_s * 1000 / steps for b in bare.samples]
    paired = [p.wall_s * 1000 / part2.n - b for p, b in zip(part2.samples, per_bare, strict=True)]
    cpu = part2.median("cpu_s") * 1000 / part2.n - bare.median("cpu_s") * 1000 / steps
    print(
        "part 2 per model call beyond a bare activity (an ensured, iterating agent step or a "
        f"sub-flow's agent child, with a set child): wall {statistics.median(paired):.1f} ms "
        f"(rounds: {', '.join(f'{p:.1f}' for p in paired)}), worker CPU {cpu:.2f} ms, "
        f"{part2.median('events') / part2.n:.2f} history events"
    )
    fan, region = rows["bare-fan"], rows["region"]
    pairs = zip(region.samples, fan.samples, strict=True)
    paired = [(reg.wall_s - b.wall_s) * 1000 / items for reg, b in pairs]
    cpu = (region.median("cpu_s") - fan.median("cpu_s")) * 1000 / items
    print(
        f"region overhead per item beyond a bare fan-out ({LANES} lanes): wall "
        f"{statistics.median(paired):.1f} ms (rounds: {', '.join(f'{p:.1f}' for p in paired)}), "
        f"worker CPU {cpu:.2f} ms"
    )
    if "bare-u" in rows:
        unsandboxed_gap = (linear.median("wall_s") - rows["bare-u"].median("wall_s")) * 1000
        print(f"  against the unsandboxed baseline: wall {unsandboxed_gap / steps:.1f} ms")
    print(
        f"plan step overhead over a bare activity: {step_wall:.1f} ms wall, "
        f"{step_cpu:.2f} ms worker CPU (median of {rounds} round(s))"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--unsandboxed-baseline", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for the test suite")
    options = parser.parse_args()
    if options.smoke:
        options.steps, options.items, options.rounds = 5, 8, 1
    asyncio.run(main(options.steps, options.items, options.rounds, options.unsandboxed_baseline))
