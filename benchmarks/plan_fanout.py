"""A wide region on one worker: 2,000 items at concurrency 256 on ``sim``.

On a fresh embedded server the real worker runs ``PlanRun`` over one region; the figures come
from the run's own history: events and bytes per item, the workflow tasks, and the longest one
(``WorkflowTaskStarted`` to ``WorkflowTaskCompleted``), which must stay a small fraction of the
deadlock timeout (2 s) however many branches are in flight: invocations start in batches
(``workflows/plan_run/pacing``). Failed or timed-out workflow tasks are counted too (a deadlock
shows as one). Measures, never asserts.

    python -m benchmarks.plan_fanout [--items 2000] [--concurrency 256] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.api.enums.v1 import EventType, TimeoutType, WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import WorkflowRunner
from temporalio.worker._workflow_instance import WorkflowInstance

import worker.worker as worker_module
from activities.config import load_settings
from client.connect import connect
from client.embedded import EmbeddedServer
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult

__all__ = ["TaskTimes", "region_plan", "workflow_tasks"]

ACTIVATIONS: list[tuple[float, float, int]] = []
"""(CPU ms, wall ms, jobs) of each workflow activation's own code, on the thread that runs it:
the CPU figure is what the workflow code costs whatever the machine's load (the wall figure,
which the deadlock detector watches, stretches with it)."""


class _TimedInstance(WorkflowInstance):
    def __init__(self, inner: WorkflowInstance) -> None:
        self.inner = inner

    def activate(self, act: Any) -> Any:
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return self.inner.activate(act)
        finally:
            ACTIVATIONS.append(
                (
                    (time.thread_time() - cpu) * 1000,
                    (time.perf_counter() - wall) * 1000,
                    len(act.jobs),
                )
            )

    def get_serialization_context(self, *args: Any) -> Any:
        return self.inner.get_serialization_context(*args)

    def get_external_store_context(self, *args: Any) -> Any:
        return self.inner.get_external_store_context(*args)

    def get_info(self) -> Any:
        return self.inner.get_info()

    def get_thread_id(self) -> int | None:
        return self.inner.get_thread_id()


class _TimedRunner(WorkflowRunner):
    def __init__(self, inner: WorkflowRunner) -> None:
        self.inner = inner

    def prepare_workflow(self, defn: Any) -> None:
        self.inner.prepare_workflow(defn)

    def create_instance(self, det: Any) -> WorkflowInstance:
        return _TimedInstance(self.inner.create_instance(det))

    def set_worker_level_failure_exception_types(self, types: Any) -> None:
        self.inner.set_worker_level_failure_exception_types(types)


def _time_activations() -> None:
    """The real worker's workflow worker (its own runner), with its activations timed
    (benchmark only)."""
    real = worker_module.Worker

    def timed(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("workflows"):
            kwargs["workflow_runner"] = _TimedRunner(kwargs["workflow_runner"])
        return real(*args, **kwargs)

    worker_module.Worker = timed  # type: ignore[misc,assignment]


MODEL = "sim:default,latency=0"
_CAUSE = "WORKFLOW_TASK_FAILED_CAUSE_"


def region_plan(items: int, concurrency: int, *, calls: int | None = None) -> dict[str, Any]:
    """One region of ``items`` sim invocations, ``concurrency`` at a time."""
    plan: dict[str, Any] = {
        "schema": "ponder-plan/1",
        "name": f"fanout-{items}",
        "steps": [
            {
                "id": "fan",
                "kind": "fanout",
                "fanout": {
                    "over": list(range(items)),
                    "chain": ["fan.one"],
                    "concurrency": concurrency,
                },
            },
            {"id": "fan.one", "kind": "agent", "model": MODEL, "prompt": "One item."},
        ],
    }
    if calls is not None:
        plan["budget"] = {"calls": calls}
    return plan


@dataclass(frozen=True)
class TaskTimes:
    tasks: int
    longest_ms: float
    failed: int
    """Workflow tasks that failed (a deadlock is one: TMPRL1101)."""
    timers: int
    events: int
    bytes: int
    slowest: list[tuple[float, int, str]]
    """The three longest tasks: (ms, activity completions it took in, the commands it sent)."""
    sticky_timeouts: int = 0
    """Tasks a busy worker did not pick up from its sticky queue in time (moved on, not lost)."""
    timed_out: int = 0
    """Tasks the worker did not complete within the 10 s start-to-close (retried)."""
    causes: list[str] = field(default_factory=list)
    """Each failed task's cause (``WORKFLOW_WORKER_UNHANDLED_FAILURE`` for a deadlock)."""
    failures: list[str] = field(default_factory=list)
    """Each failed task's failure message (``[TMPRL1101] Potential deadlock ...``)."""


async def workflow_tasks(handle: WorkflowHandle) -> TaskTimes:
    """The run's workflow tasks from its history: how many, the longest, the failed ones."""
    history = await handle.fetch_history()
    started: float | None = None
    longest, tasks, failed, timers, sticky_timeouts, timed_out = 0.0, 0, 0, 0, 0, 0
    causes: list[str] = []
    failures: list[str] = []
    durations: list[tuple[float, int, int]] = []
    events = list(history.events)
    took_in, completions = 0, 0
    for n, event in enumerate(events):
        at = event.event_time.ToDatetime().timestamp()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completions += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started, took_in, completions = at, completions, 0
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and started is not None:
            tasks += 1
            ms = (at - started) * 1000
            longest = max(longest, ms)
            durations.append((ms, took_in, n))
            started = None
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            cause = event.workflow_task_failed_event_attributes.cause
            causes.append(WorkflowTaskFailedCause.Name(cause).removeprefix(_CAUSE))
            failures.append(event.workflow_task_failed_event_attributes.failure.message)
            failed += 1
            started = None
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            attrs = event.workflow_task_timed_out_event_attributes
            # schedule-to-start on the sticky queue: the worker was busy, the task moved on;
            # start-to-close: the worker did not answer within 10 s (a loaded machine)
            sticky = attrs.timeout_type == TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
            sticky_timeouts += int(sticky)
            timed_out += int(not sticky)
            started = None
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            timers += 1
    size = sum(e.ByteSize() for e in events)
    slowest = []
    for ms, took_in, n in sorted(durations, reverse=True)[:3]:
        sent: dict[str, int] = {}
        for later in events[n + 1 :]:
            name = EventType.Name(later.event_type).removeprefix("EVENT_TYPE_")
            answer = name.endswith(("_STARTED", "_COMPLETED")) and name != "TIMER_STARTED"
            if name.startswith("WORKFLOW_TASK") or answer:
                break
            sent[name] = sent.get(name, 0) + 1
        shown = ", ".join(f"{count} {name.lower()}" for name, count in sent.items()) or "nothing"
        slowest.append((ms, took_in, shown))
    return TaskTimes(
        tasks, longest, failed, timers, len(events), size, slowest, sticky_timeouts, timed_out,
        causes, failures,
    )  # fmt: skip


async def run_once(client: Client, queue: str, items: int, concurrency: int) -> None:
    run_id = f"fanout-{uuid.uuid4().hex[:8]}"
    arg = PlanRunInput(plan=region_plan(items, concurrency, calls=items), run_id=run_id)
    began = time.perf_counter()
    handle = await client.start_workflow(
        PLAN_RUN, arg, id=run_id, task_queue=queue, result_type=PlanRunResult
    )
    result = await handle.result()
    seconds = time.perf_counter() - began
    t = await workflow_tasks(handle)
    print(
        f"{items} items at concurrency {concurrency}: {seconds:.1f} s "
        f"({seconds * 1000 / items:.1f} ms/item), {result.calls} calls; "
        f"history {t.events} events ({t.events / items:.2f}/item), "
        f"{t.bytes / items:.0f} B/item; {t.tasks} workflow tasks, longest {t.longest_ms:.0f} ms, "
        f"{t.failed} failed {t.causes}, {t.timed_out} timed out, {t.sticky_timeouts} sticky "
        f"schedule-to-start timeouts; {t.timers} pacing timers",
        flush=True,
    )
    for ms, took_in, sent in t.slowest:
        print(f"  a {ms:.0f} ms task took in {took_in} completions, sent: {sent}", flush=True)
    for message in sorted({m for m in t.failures if m}):  # a force-closed task has none
        print(f"  a failed task: {message}", flush=True)
    if ACTIVATIONS:
        cpu = sorted(a[0] for a in ACTIVATIONS)
        wall = sorted(a[1] for a in ACTIVATIONS)
        heaviest = max(ACTIVATIONS)
        print(
            f"  {len(cpu)} activations: workflow code CPU max {cpu[-1]:.0f} ms "
            f"({heaviest[2]} jobs), p99 {cpu[int(len(cpu) * 0.99)]:.0f} ms, median "
            f"{cpu[len(cpu) // 2]:.1f} ms; wall max {wall[-1]:.0f} ms (deadlock timeout 2,000 ms)",
            flush=True,
        )
        ACTIVATIONS.clear()


async def main(items: int, concurrency: int, rounds: int) -> None:
    _time_activations()
    home = Path(tempfile.mkdtemp(prefix="ponder-bench-"))
    settings = load_settings(home=str(home))
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    async with EmbeddedServer(home).lease() as info:
        client = await connect(settings, info.address)
        queue = f"bench-{uuid.uuid4()}"
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            await run_once(client, queue, 20, 8)  # warm imports and the sandbox
            ACTIVATIONS.clear()
            for _ in range(rounds):
                await run_once(client, queue, items, concurrency)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    options = parser.parse_args()
    if options.smoke:
        options.items, options.concurrency, options.rounds = 20, 8, 1
    asyncio.run(main(options.items, options.concurrency, options.rounds))
