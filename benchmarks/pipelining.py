"""Pipelined against barrier tournament rounds under heavy-tailed latency.

One fresh local dev server, one process (worker in-process). Each repetition runs the same
tournament (profile, seed, sim model with ``latency=lognormal:MEDIAN,SIGMA``, every role at the
same concurrency) twice, ``rounds="barrier"`` and ``rounds="pipelined"`` (each goes first in
turn, after an uncounted warm-up run): the sim draws each call's latency from the run seed and
the call's key, so both runs wait the same time for every call and only the schedule differs.
Wall time is start to result; the pair must agree on the winner and the leaderboard (printed,
not asserted: benchmarks measure).

Each pair is also replayed with no overhead (``benchmarks/critical_path.py``: the calls each
run made, with the latencies they saw, scheduled as the workflow schedules them, every workflow
task, fit and write taking no time), so the print shows how much of a wall is overhead and how
much is the schedule, and what the run-wide width of runs started before
``pipelined-lane-widths`` would have cost. That replay found the gap of the first version
(0.83 at concurrency 8): not overhead (the measured walls are within 3 s of their replays) but
that width, one of 8 shared by the overlapping phases (0.83 replayed, where each role at its own
width gives 0.72 on seeds 100 and 101, and 0.75 over 40 latency seeds).

The last line is ``pipelined / barrier = X`` (sum of walls over the repetitions); the goal at
concurrency 8 on the paper profile with median 2 s and sigma 1 is at most 0.80 (measured 0.73,
2026-12-01, ``--repeat 2``, load average 3 to 8; 0.78 at 16, 0.82 at 32; the README has the
figures).

    python -m benchmarks.pipelining [--profile paper] [--median-ms 2000] [--sigma 1]
                                    [--concurrency 8] [--repeat 1] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from benchmarks.critical_path import barrier_wall, phases_of_run, pipelined_wall
from client.connect import connect
from client.embedded import DISPATCH_TUNING, find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.names import TOURNAMENT
from workflows.tournament.types import Rounds, TournamentInput, TournamentResult

GOAL = 0.80
TASK = "Write a function that returns the k-th smallest element of an unsorted list."


@dataclass
class Timed:
    seconds: float
    result: TournamentResult


async def run_once(
    client: Client, queue: str, rounds: Rounds, *, profile: str, model: str, seed: int, width: int
) -> Timed:
    payload = TournamentInput(
        task=TASK,
        profile=profile,
        model=model,
        seed=seed,
        rounds=rounds,
        concurrency={"generate": width, "judge": width, "mutate": width},  # type: ignore[arg-type]
        bootstrap_resamples=0,
    )
    started = time.perf_counter()
    result = await client.execute_workflow(
        TOURNAMENT,
        payload,
        id=f"bench-{rounds}-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=TournamentResult,
    )
    return Timed(time.perf_counter() - started, result)


def replayed(barrier: Timed, pipelined: Timed, width: int) -> str:
    """Both runs' walls with no overhead, and the pipelined one with a shared run-wide width."""
    ideal_barrier = barrier_wall(phases_of_run(Path(barrier.result.run_dir)), width)
    phases = phases_of_run(Path(pipelined.result.run_dir))
    ideal, shared = pipelined_wall(phases, width), pipelined_wall(phases, width, run_width=width)
    return (
        f"    no overhead: barrier {ideal_barrier:7.1f} s, pipelined {ideal:7.1f} s "
        f"({ideal / ideal_barrier:.2f}); with a run-wide width of {width}: {shared:.1f} s "
        f"({shared / ideal_barrier:.2f})"
    )


async def measure(args: argparse.Namespace) -> float:
    model = f"sim:default,latency=lognormal:{args.median_ms:g},{args.sigma:g}"
    width = args.concurrency
    print(f"{args.profile} profile, {model}, concurrency {width}, {args.repeat} x 2 runs")
    walls: dict[str, list[float]] = {"barrier": [], "pipelined": []}
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as home:
        settings = load_settings(home=home)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=find_temporal_binary(),
            dev_server_extra_args=list(DISPATCH_TUNING),  # as the embedded server runs
            ui=False,
        )
        try:
            client = await connect(settings, env.client.service_client.config.target_host)
            queue = f"bench-{uuid.uuid4()}"
            async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
                # Not counted: the first run pays the worker's and the server's warm-up.
                await run_once(client, queue, "pipelined", profile="quick", model="sim:default",
                               seed=0, width=width)  # fmt: skip
                for r in range(args.repeat):
                    runs: dict[str, Timed] = {}
                    order: list[Rounds] = ["barrier", "pipelined"]
                    for rounds in order if r % 2 == 0 else order[::-1]:  # interleaved
                        runs[rounds] = await run_once(
                            client, queue, rounds, profile=args.profile, model=model,
                            seed=100 + r, width=width,
                        )  # fmt: skip
                        walls[rounds].append(runs[rounds].seconds)
                    barrier, pipelined = runs["barrier"], runs["pipelined"]
                    same = (
                        barrier.result.winner_id == pipelined.result.winner_id
                        and barrier.result.leaderboard == pipelined.result.leaderboard
                    )
                    print(
                        f"  seed {100 + r}: barrier {barrier.seconds:7.1f} s, pipelined "
                        f"{pipelined.seconds:7.1f} s ({pipelined.seconds / barrier.seconds:.2f}); "
                        f"{barrier.result.spent.calls} calls each; same winner and leaderboard: "
                        f"{same}",
                        flush=True,
                    )
                    print(replayed(barrier, pipelined, width), flush=True)
        finally:
            await env.shutdown()
    return sum(walls["pipelined"]) / sum(walls["barrier"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--median-ms", type=float, default=2000.0)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs (default 1)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:
        args.profile, args.median_ms, args.concurrency, args.repeat = "quick", 5.0, 2, 1
    ratio = asyncio.run(measure(args))
    print(f"goal at concurrency 8 (paper, median 2 s, sigma 1): <= {GOAL:.2f}")
    print(f"pipelined / barrier = {ratio:.2f}")


if __name__ == "__main__":
    main()
