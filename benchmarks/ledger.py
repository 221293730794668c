"""One shared ledger under load: how many draws a second its entity workflow takes, and how far
32 runs on two worker processes get past its limit when one worker is SIGKILLed mid-run.

Part 1, reservations per second: ``--draws`` draws of one call each (``block = 1``, the worst
case) sent straight to one ``Ledger`` entity, ``--concurrency`` in flight (the server takes
about 10 updates in flight per workflow), through a worker in this process. It is what one
entity workflow takes at most; ponder stays well under it by reserving in blocks
(``[ledgers.NAME] block``, 8 by default) and reporting once a second per worker: about two
updates per block, so a thousand calls a minute cost the entity about four updates a second.

Part 2, the proof: ``--runs`` quick sim tournaments (calls with a 50-150 ms latency) drawing on
one ledger of ``--calls`` calls in blocks of ``--block``, served by two ``python -m worker``
processes. Once a third of the ledger is spent, one worker is SIGKILLed (the other carries on);
the benchmark waits until every run has completed or is paused ``awaiting_budget``, and every
hold the killed worker left has expired. It then counts the calls actually made (the sim's exchanges
in the runs' raw events, every attempt) against the limit. The documented window is what a
killed worker made and had not reported: at most one block per run it held a block for (in
practice what it made in its last second of reports).

    python -m benchmarks.ledger [--draws 400] [--concurrency 8] [--runs 32] [--calls 400]
                                [--block 8] [--smoke]

Measures, never asserts; the last line is the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.config import load_settings
from activities.ledger import draw_token
from client.connect import connect
from client.embedded import EmbeddedServer
from client.ledgers import ledger_view
from client.session import has_worker
from workflows.call_options import CallOptions
from workflows.ledger.types import (
    DrawInput,
    DrawResult,
    LedgerDraw,
    LedgerInput,
    LedgerLimits,
    LedgerView,
    ledger_workflow_id,
    token_digest,
)
from workflows.ledger.workflow import LedgerWorkflow
from workflows.names import LEDGER, QUERY_PROGRESS, TOURNAMENT, UPDATE_LEDGER_DRAW
from workflows.tournament.types import Progress, TournamentInput

MODEL = "sim:default,latency=uniform:50-150"
DIGEST = token_digest("0" * 32)
"""Part 1's ledger's token digest (any: it only has to match its draws')."""
TTL_S = 10.0
"""The holds' ``hold_ttl_s``: how long the killed worker's holds outlive it."""


async def draw_rate(client: Client, draws: int, concurrency: int) -> tuple[float, float]:
    """(draws per second, median ms per draw) of one entity, ``concurrency`` in flight."""
    queue = f"bench-ledger-{uuid.uuid4().hex[:8]}"
    name = f"rate{uuid.uuid4().hex[:8]}"
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with gate:
            began = time.monotonic()
            # As a worker's drawer sends it: update-with-start, one operation per draw.
            start_op: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                LEDGER,
                LedgerInput(
                    name=name, limits=LedgerLimits(), hold_ttl_s=3600.0, token_sha256=DIGEST
                ),
                id=ledger_workflow_id(name),
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                task_queue=queue,
            )
            await client.execute_update_with_start_workflow(
                UPDATE_LEDGER_DRAW,
                DrawInput(token_sha256=DIGEST, key=f"k{i}", holder="bench", calls=1),
                start_workflow_operation=start_op,
                result_type=DrawResult,
            )
            latencies.append(time.monotonic() - began)

    async with Worker(
        client,
        task_queue=queue,
        workflows=[LedgerWorkflow],
        workflow_runner=UnsandboxedWorkflowRunner(),  # as `python -m worker` runs them
    ):
        await one(-1)  # started, warm
        began = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(draws)))
        wall = time.monotonic() - began
        await client.get_workflow_handle(ledger_workflow_id(name)).terminate("benchmark over")
    latencies.sort()
    return draws / wall, 1000 * latencies[len(latencies) // 2]


@contextlib.asynccontextmanager
async def workers(count: int, address: str, home: Path, queue: str) -> AsyncIterator[list[Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env |= {"TEMPORAL_ADDRESS": address, "PONDER_HOME": str(home), "PONDER_TASK_QUEUE": queue}

    async def one() -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "worker", env=env, stderr=asyncio.subprocess.DEVNULL
        )

    processes = [await one() for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.terminate()
        for process in processes:
            await process.wait()


def exchanges(runs_dir: Path) -> tuple[int, int]:
    """(exchanges, distinct logical calls) the sim made, from every run's raw events."""
    lines, calls = 0, set()
    for path in runs_dir.glob("*/raw-events.jsonl"):
        for line in path.read_text().splitlines():
            if line:
                lines += 1
                calls.add(json.loads(line).get("call_id"))
    return lines, len(calls)


async def proof(
    client: Client, address: str, home: Path, runs: int, calls: int, block: int
) -> dict[str, Any]:
    name = "bench"
    settings = load_settings(home=str(home))
    token = draw_token(settings, name)
    queue = f"bench-ledger-{uuid.uuid4().hex[:8]}"
    options = CallOptions(ledger=LedgerDraw(name=name, token=token))
    async with workers(2, address, home, queue) as procs:
        deadline = time.monotonic() + 120
        while not await has_worker(client, queue):
            if time.monotonic() > deadline:
                raise RuntimeError(f"no worker polls {queue} after 120 s")
            await asyncio.sleep(0.2)
        began = time.monotonic()

        async def kill_at_a_third() -> int:
            while True:  # while the runs start: the first ones draw at once
                view = await ledger_view(client, name)
                if view is not None and view.calls >= calls // 3:
                    procs[0].send_signal(signal.SIGKILL)
                    await procs[0].wait()
                    return view.calls
                await asyncio.sleep(0.05)

        killer = asyncio.create_task(kill_at_a_third())
        handles: list[WorkflowHandle] = [
            await client.start_workflow(
                TOURNAMENT,
                TournamentInput(task="Sort a list in place.", model=MODEL, seed=i, calls=options),
                id=f"ledger-bench-{uuid.uuid4().hex[:10]}",
                task_queue=queue,
            )
            for i in range(runs)
        ]
        killed_at = await killer

        async def settled() -> tuple[list[str], LedgerView | None]:
            states = [(await h.query(QUERY_PROGRESS, result_type=Progress)).status for h in handles]
            return states, await ledger_view(client, name)

        while True:
            states, view = await settled()
            done = all(s in ("completed", "awaiting_budget") for s in states)
            if done and view is not None and view.holds == 0:
                break
            await asyncio.sleep(0.5)
        wall = time.monotonic() - began
        made, logical = exchanges(settings.runs_dir)
        for handle in handles:
            with contextlib.suppress(Exception):
                await handle.terminate("benchmark over")
        await client.get_workflow_handle(ledger_workflow_id(name)).terminate("benchmark over")
    assert view is not None
    return {
        "runs": runs,
        "limit": calls,
        "block": block,
        "killed_at": killed_at,
        "made": made,
        "logical": logical,
        "counted": view.calls,
        "over": max(0, made - calls),
        "window": block * runs,
        "completed": states.count("completed"),
        "paused": states.count("awaiting_budget"),
        "draws": view.draws,
        "reports": view.reports,
        "wall_s": wall,
    }


async def main_async(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="ponder-bench-ledger-"))
    (home / "ponder.toml").write_text(
        f"[ledgers.bench]\ncalls = {args.calls}\nblock = {args.block}\n"
        f"hold_ttl_s = {5.0 if args.smoke else TTL_S}\n"
    )
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    async with EmbeddedServer(home).lease(idle_s=0) as info:
        client = await connect(load_settings(home=str(home)), info.address)
        rate, median_ms = await draw_rate(client, args.draws, args.concurrency)
        print(
            f"one entity, {args.draws} draws of 1 call, {args.concurrency} in flight: "
            f"{rate:.0f} draws/s, median {median_ms:.0f} ms",
            flush=True,
        )
        found = await proof(client, info.address, home, args.runs, args.calls, args.block)
    print(
        f"\n{'runs':>5} {'limit':>6} {'block':>6} {'killed at':>10} {'made':>5} {'counted':>8} "
        f"{'over':>5} "
        f"{'window':>7} {'completed':>10} {'paused':>7} {'draws':>6} {'reports':>8} {'wall s':>7}"
    )
    f = found
    print(
        f"{f['runs']:>5} {f['limit']:>6} {f['block']:>6} {f['killed_at']:>10} {f['made']:>5} "
        f"{f['counted']:>8} {f['over']:>5} {f['window']:>7} {f['completed']:>10} "
        f"{f['paused']:>7} {f['draws']:>6} {f['reports']:>8} {f['wall_s']:>7.1f}"
    )
    updates = (f["draws"] + f["reports"]) / f["wall_s"]
    print(
        f"entity: {rate:.0f} draws/s at most; the runs sent it {updates:.1f} updates/s; "
        f"{f['made']} calls made against a limit of {f['limit']} across a SIGKILL "
        f"(over by {f['over']}, window {f['window']})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--runs", type=int, default=32)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--block", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the test suite's)")
    args = parser.parse_args()
    if args.smoke:
        args.draws, args.concurrency, args.runs, args.calls, args.block = 20, 4, 2, 16, 4
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
