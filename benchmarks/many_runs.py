"""Many runs on one worker: 100 quick tournaments from one connected Python client, against the
raw activity rate measured in the same process.

``Ponder.connect()`` on a fresh embedded server (its own ``$PONDER_HOME``) runs the worker in
this process, as a script using the Python client does. The benchmark starts ``--runs`` quick
sim tournaments one after another (``await ponder.tournament(...)``), then waits for them all.
For the reference, the same process runs the same number of bare ``call_model`` activities,
``--concurrency`` in flight, through a plain worker on the same server. Rounds interleave
(tournaments, reference, tournaments, ...) and the medians are printed, because the machine is
shared and noisy; beside the wall clock, the CPU per call of this process (client and worker)
and of the server process, which are far steadier than the wall clock on a loaded machine.

Scale-out: the client starts the same runs on a task queue served by one, then two,
``python -m worker`` processes (``TEMPORAL_ADDRESS`` set to the same server, one home: the
shared run store and payload store, as the compose file's ``ponder-worker`` service mounts),
and prints the ratio of their wall times. Measures, never asserts.

    python -m benchmarks.many_runs [--runs 100] [--concurrency 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import httpx
    from temporalio.client import Client
    from temporalio.worker import Worker

    from activities.call_model import ModelActivities
    from activities.config import Settings
    from benchmarks.bare_calls import BARE_CALLS, MODEL, BareCalls, BareInput
    from client.api import Ponder, TournamentRun
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from client.session import has_worker
    from worker.worker import workflow_runner
    from workflows.tournament.types import TournamentInput


@dataclass
class Sample:
    calls: int
    wall_s: float
    start_s: float = 0.0
    """Of ``wall_s``, the time spent in the start calls (tournaments only)."""
    cpu_ms: float = 0.0
    """CPU of this process (client and worker) per call."""
    server_cpu_ms: float = 0.0
    """CPU of the server process per call."""

    @property
    def rate(self) -> float:
        return self.calls / self.wall_s


class CpuClock:
    """CPU seconds used so far by this process and by the server process ``pid``."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid

    def read(self) -> tuple[float, float]:
        server = 0.0
        if self.server_pid is not None:
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{self.server_pid}/stat").read_text().rsplit(")", 1)[1]
                utime, stime = fields.split()[11:13]
                server = (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")
        return time.process_time(), server

    def per_call(self, before: tuple[float, float], sample: Sample) -> Sample:
        after = self.read()
        sample.cpu_ms = 1000 * (after[0] - before[0]) / sample.calls
        sample.server_cpu_ms = 1000 * (after[1] - before[1]) / sample.calls
        return sample


@dataclass
class Row:
    label: str
    samples: list[Sample] = field(default_factory=list)

    def median(self, pick: str) -> float:
        return statistics.median(getattr(s, pick) for s in self.samples)


def quick(index: int) -> TournamentInput:
    return TournamentInput(task=f"Name a prime, take {index}.", model=MODEL, seed=index)


async def many_tournaments(ponder: Ponder, runs: int) -> Sample:
    """Start ``runs`` tournaments one after another, then wait for them all."""
    started = time.perf_counter()
    handles: list[TournamentRun] = [await ponder.tournament(quick(i)) for i in range(runs)]
    start_s = time.perf_counter() - started
    results = await asyncio.gather(*(run.result() for run in handles))
    wall = time.perf_counter() - started
    return Sample(sum(r.spent.calls for r in results), wall, start_s)


async def raw_calls(client: Client, queue: str, calls: int, lanes: int) -> Sample:
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    await client.execute_workflow(
        BARE_CALLS,
        BareInput(run_id=run_id, calls=calls, lanes=lanes),
        id=run_id,
        task_queue=queue,
        result_type=int,
    )
    return Sample(calls, time.perf_counter() - started)


@contextlib.asynccontextmanager
async def bare_worker(client: Client, settings: Settings) -> AsyncIterator[str]:
    queue = f"bench-raw-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(timeout=None) as http:
        activities = ModelActivities(settings, http)
        async with Worker(
            client,
            task_queue=queue,
            workflows=[BareCalls],
            activities=[activities.call_model],
            max_concurrent_activities=64,
            # The runner the tournaments' worker uses (none, live), so only the runs differ.
            workflow_runner=workflow_runner(settings.workflow_sandbox),
        ):
            yield queue


async def single_process(runs: int, concurrency: int, rounds: int, home: Path) -> list[Row]:
    tournaments = Row(f"{runs} quick tournaments, Ponder.connect")
    raw = Row(f"bare call_model, {concurrency} in flight")
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    async with Ponder.connect(home=home) as ponder:
        client = ponder._session.client
        state = EmbeddedServer(home).read_state()
        clock = CpuClock(state.pid if state else None)
        async with bare_worker(client, ponder.settings) as queue:
            await (await ponder.tournament(quick(10**6))).result()  # warm up: imports, caches
            for round_no in range(rounds):
                before = clock.read()
                tour = clock.per_call(before, await many_tournaments(ponder, runs))
                tournaments.samples.append(tour)
                before = clock.read()
                bare = await raw_calls(client, queue, tour.calls, concurrency)
                raw.samples.append(clock.per_call(before, bare))
                print(
                    f"  round {round_no + 1}: tournaments {tour.rate:.1f} calls/s "
                    f"(starts {1000 * tour.start_s / runs:.0f} ms/run), "
                    f"raw {raw.samples[-1].rate:.1f} calls/s",
                    flush=True,
                )
    return [raw, tournaments]


@contextlib.asynccontextmanager
async def worker_processes(count: int, address: str, home: Path, queue: str) -> AsyncIterator[None]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env |= {"TEMPORAL_ADDRESS": address, "PONDER_HOME": str(home), "PONDER_TASK_QUEUE": queue}
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-m", "worker", env=env, stderr=asyncio.subprocess.DEVNULL
        )
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            await process.wait()


async def scale_out(runs: int, rounds: int, home: Path) -> list[Row]:
    """The same runs served by one, then two, worker processes on the same server."""
    rows = {count: Row(f"{runs} tournaments, {count} worker process(es)") for count in (1, 2)}
    async with Ponder.connect(home=home) as local:
        address = local.settings.temporal_address or await _address(local)
        for _ in range(rounds):
            for count, row in rows.items():
                queue = f"bench-scale-{uuid.uuid4().hex[:8]}"
                async with worker_processes(count, address, home, queue):
                    settings = local.settings.model_copy(
                        update={"temporal_address": address, "task_queue": queue}
                    )
                    client = await connect(settings)
                    deadline = time.monotonic() + 120
                    while not await has_worker(client, queue):
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"no worker polls {queue} after 120 s")
                        await asyncio.sleep(0.2)
                    async with Ponder.connect(address=address, home=home, task_queue=queue) as p:
                        row.samples.append(await many_tournaments(p, runs))
                print(f"  {row.label}: {row.samples[-1].rate:.1f} calls/s", flush=True)
    return list(rows.values())


async def _address(ponder: Ponder) -> str:
    return ponder._session.client.service_client.config.target_host


def print_table(rows: list[Row], runs: int) -> None:
    print(
        f"\n{'mode':<42} {'calls':>6} {'wall s':>7} {'calls/s':>8} {'start ms/run':>13} "
        f"{'cpu ms/call':>12} {'server cpu':>11}"
    )
    for row in rows:
        start = row.median("start_s")
        per_run = f"{1000 * start / runs:>13.0f}" if start else f"{'':>13}"
        cpu = row.median("cpu_ms")
        server = row.median("server_cpu_ms")
        print(
            f"{row.label:<42} {row.samples[0].calls:>6} {row.median('wall_s'):>7.2f} "
            f"{row.median('rate'):>8.1f} {per_run} "
            + (f"{cpu:>12.1f} {server:>11.1f}" if cpu else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-scale-out", action="store_true", help="skip the two-worker part")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.concurrency, args.rounds = 3, 4, 1
    for name in [k for k in os.environ if k.startswith(("PONDER_", "TEMPORAL_"))]:
        del os.environ[name]  # the embedded default, in a home of its own
    os.environ["PONDER_SERVER_IDLE_S"] = "0"  # its server stops with the benchmark
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        rows = asyncio.run(single_process(args.runs, args.concurrency, args.rounds, Path(tmp)))
        scaled = (
            [] if args.no_scale_out else asyncio.run(scale_out(args.runs, args.rounds, Path(tmp)))
        )
    print_table(rows + scaled, args.runs)
    raw, tournaments = rows
    if scaled:
        one, two = scaled
        print(
            f"two worker processes / one (wall) = {two.median('wall_s') / one.median('wall_s'):.2f}"
            f" on {os.cpu_count()} cores (the server, the client and the workers share them)"
        )
    print(
        f"tournament calls/s {tournaments.median('rate'):.1f}, raw {raw.median('rate'):.1f}: "
        f"tournaments / raw = {tournaments.median('rate') / raw.median('rate'):.2f}"
    )


if __name__ == "__main__":
    main()
