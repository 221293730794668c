"""A wide region on one worker: 2,000 items at concurrency 256 on ``sim`` (issue 13, item 5).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from activities.config import load_settings
from client.connect import connect
from client.embedded import EmbeddedServer
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult

__all__ = ["TaskTimes", "region_plan", "workflow_tasks"]

MODEL = "sim:default,latency=0"


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
    """Workflow tasks that failed or timed out (a deadlock is one)."""
    timers: int
    events: int
    bytes: int
    slowest: list[tuple[float, int, str]]
    """The three longest tasks: (ms, event id of its start, the commands it sent)."""


async def workflow_tasks(handle: WorkflowHandle) -> TaskTimes:
    """The run's workflow tasks from its history: how many, the longest, the failed ones."""
    history = await handle.fetch_history()
    started: float | None = None
    longest, tasks, failed, timers = 0.0, 0, 0, 0
    durations: list[tuple[float, int, int]] = []
    events = list(history.events)
    for n, event in enumerate(events):
        at = event.event_time.ToDatetime().timestamp()
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started = at
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and started is not None:
            tasks += 1
            ms = (at - started) * 1000
            longest = max(longest, ms)
            durations.append((ms, event.event_id - 1, n))
            started = None
        elif kind in (
            EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
            EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
        ):
            failed += 1
            started = None
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            timers += 1
    size = sum(e.ByteSize() for e in events)
    slowest = []
    for ms, event_id, n in sorted(durations, reverse=True)[:3]:
        sent: dict[str, int] = {}
        for later in events[n + 1 :]:
            name = EventType.Name(later.event_type).removeprefix("EVENT_TYPE_")
            answer = name.endswith(("_STARTED", "_COMPLETED")) and name != "TIMER_STARTED"
            if name.startswith("WORKFLOW_TASK") or answer:
                break
            sent[name] = sent.get(name, 0) + 1
        shown = ", ".join(f"{count} {name.lower()}" for name, count in sent.items()) or "nothing"
        slowest.append((ms, event_id, shown))
    return TaskTimes(tasks, longest, failed, timers, len(events), size, slowest)


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
        f"{t.failed} failed or timed out; {t.timers} pacing timers",
        flush=True,
    )
    for ms, event_id, sent in t.slowest:
        print(f"  a {ms:.0f} ms task (started at event {event_id}) sent: {sent}", flush=True)


async def main(items: int, concurrency: int, rounds: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="ponder-bench-"))
    settings = load_settings(home=str(home))
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    async with EmbeddedServer(home).lease() as info:
        client = await connect(settings, info.address)
        queue = f"bench-{uuid.uuid4()}"
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            await run_once(client, queue, 20, 8)  # warm imports and the sandbox
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
