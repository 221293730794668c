"""What Temporal costs per model call: 1,000 zero-latency ``sim`` calls, with and without it.

On a fresh embedded server (its own SQLite file in a temporary ``$PONDER_HOME``) a worker runs
two benchmark-only workflows defined here: one awaits 1,000 ``call_model`` activities one
after another, the other keeps 32 in flight. For the ratio the same 1,000 calls also run
through the ``call_model`` activity code without a server (``ActivityEnvironment``) and
straight through ``SimProvider.request`` in a plain asyncio loop; and the sequential workflow
runs once more with a no-op activity in place of ``call_model``, which separates Temporal's
own per-activity round trip from ponder's. Measures, never asserts.

    python -m benchmarks.activity_overhead [--calls 1000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import httpx
    from temporalio.client import Client
    from temporalio.testing import ActivityEnvironment
    from temporalio.worker import Worker

    from activities.call_model import ModelActivities
    from activities.config import Endpoint, Settings, load_settings
    from activities.model_types import CallModelInput, ModelRequest, ModelResponse
    from activities.providers.base import CallContext
    from activities.providers.sim import SimProvider
    from activities.raw_events import RawEventLog
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from workflows.call_options import CallOptions
    from workflows.model_calls import call_model

MODEL = "sim:default"
NOOP = "bench_noop"


@dataclass
class BenchInput:
    run_id: str
    calls: int
    concurrency: int = 1
    noop: bool = False
    """Run the no-op activity instead of ``call_model`` (Temporal's cost alone)."""


def bench_call(run_id: str, index: int) -> CallModelInput:
    request = ModelRequest(model=MODEL, prompt=f"benchmark question {index}", seed=index)
    return CallModelInput(run_id=run_id, phase="bench", index=index, request=request)


@activity.defn(name=NOOP)
async def noop_call(input: CallModelInput) -> ModelResponse:
    return ModelResponse(text="", model="noop", provider="noop")


async def one_call(input: BenchInput, index: int) -> None:
    call = bench_call(input.run_id, index)
    if input.noop:
        await workflow.execute_activity(
            NOOP,
            call,
            result_type=ModelResponse,
            start_to_close_timeout=timedelta(minutes=1),
        )
    else:
        await call_model(call, CallOptions())


@workflow.defn(name="BenchSequentialCalls")
class SequentialCalls:
    @workflow.run
    async def run(self, input: BenchInput) -> int:
        for index in range(input.calls):
            await one_call(input, index)
        return input.calls


@workflow.defn(name="BenchConcurrentCalls")
class ConcurrentCalls:
    @workflow.run
    async def run(self, input: BenchInput) -> int:
        in_flight = asyncio.Semaphore(input.concurrency)

        async def one(index: int) -> None:
            async with in_flight:
                await one_call(input, index)

        await asyncio.gather(*(one(index) for index in range(input.calls)))
        return input.calls


@dataclass
class Row:
    mode: str
    calls: int
    seconds: float
    history_events: int | None = None

    @property
    def per_second(self) -> float:
        return self.calls / self.seconds


async def timed(mode: str, calls: int, work: Callable[[], Awaitable[object]]) -> Row:
    started = time.perf_counter()
    await work()
    return Row(mode, calls, time.perf_counter() - started)


async def direct_provider(calls: int, http: httpx.AsyncClient) -> None:
    """The same calls straight through the provider: no Temporal, no activity code."""
    provider = SimProvider()
    endpoint = Endpoint(kind="sim")
    log = RawEventLog(None, base={})
    for index in range(calls):
        call = bench_call("direct", index)
        ctx = CallContext(
            call_id=call.call_id,
            call_key=call.call_key,
            run_id=call.run_id,
            phase=call.phase,
            attempt=call.attempt,
            provider_name="sim",
            model_name=MODEL.split(":", 1)[1],
            endpoint=endpoint,
            api_key=None,
            http=http,
            raw_events=log,
        )
        await provider.request(call.request, ctx)


async def activity_without_server(calls: int, activities: ModelActivities) -> None:
    """The ``call_model`` activity body (resolve, raw-event log, heartbeats) without a server."""
    env = ActivityEnvironment()
    # As scheduled by workflow "no-server": an activity writes only its workflow's run directory.
    env.info = dataclasses.replace(env.info, workflow_id="no-server")
    for index in range(calls):
        await env.run(activities.call_model, bench_call("no-server", index))


async def run_workflow(client: Client, queue: str, workflow_name: str, input: BenchInput) -> int:
    handle = await client.start_workflow(
        workflow_name, input, id=input.run_id, task_queue=queue, result_type=int
    )
    await handle.result()
    history = await handle.fetch_history()
    return len(history.events)


async def measure(calls: int, concurrency: int, home: Path) -> list[Row]:
    settings: Settings = load_settings(home=str(home))
    rows: list[Row] = []
    async with httpx.AsyncClient(timeout=None) as http:
        activities = ModelActivities(settings, http)
        rows.append(
            await timed("direct SimProvider loop", calls, lambda: direct_provider(calls, http))
        )
        rows.append(
            await timed(
                "call_model code, no server",
                calls,
                lambda: activity_without_server(calls, activities),
            )
        )
        print(f"starting an embedded Temporal server in {home} ...", flush=True)
        async with EmbeddedServer(home).lease() as info:
            client = await connect(settings, info.address)
            queue = f"bench-{uuid.uuid4()}"
            async with Worker(
                client,
                task_queue=queue,
                workflows=[SequentialCalls, ConcurrentCalls],
                activities=[activities.call_model, noop_call],
                max_concurrent_activities=64,
            ):
                warm_up = BenchInput(run_id=f"bench-warm-{uuid.uuid4().hex[:8]}", calls=20)
                await run_workflow(client, queue, "BenchSequentialCalls", warm_up)
                for name, mode, width, noop in (
                    ("BenchSequentialCalls", "Temporal, sequential", 1, False),
                    ("BenchSequentialCalls", "Temporal, sequential, no-op", 1, True),
                    (
                        "BenchConcurrentCalls",
                        f"Temporal, {concurrency} concurrent",
                        concurrency,
                        False,
                    ),
                ):
                    input = BenchInput(
                        run_id=f"bench-{uuid.uuid4().hex[:8]}",
                        calls=calls,
                        concurrency=width,
                        noop=noop,
                    )
                    print(f"running {mode} ...", flush=True)
                    started = time.perf_counter()
                    events = await run_workflow(client, queue, name, input)
                    rows.append(Row(mode, calls, time.perf_counter() - started, events))
    return rows


def print_table(rows: list[Row]) -> None:
    direct = rows[0]
    print(f"\n{rows[0].calls} sim calls (zero latency), wall time per mode\n")
    header = f"{'mode':<28} {'calls':>6} {'wall s':>8} {'calls/s':>9} {'x direct':>9} {'events':>7}"
    print(header)
    for row in rows:
        slower = direct.per_second / row.per_second
        events = "" if row.history_events is None else str(row.history_events)
        print(
            f"{row.mode:<28} {row.calls:>6} {row.seconds:>8.2f} {row.per_second:>9.0f} "
            f"{slower:>8.1f}x {events:>7}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.concurrency = 20, 4
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        rows = asyncio.run(measure(args.calls, args.concurrency, Path(tmp)))
    print_table(rows)


if __name__ == "__main__":
    main()
