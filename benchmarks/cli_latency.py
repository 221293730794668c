"""How long ``ponder`` commands take to answer (issue 16): each command's median wall time next to
``python -c pass`` (the interpreter's own start on this machine).

One sim run of each kind is made first (an Ask, a quick tournament, a plan, a small campaign);
the reads then run with the embedded server down (the run store answers: no server starts),
then each ended run's ``status`` (its stored view again: ``progress.json``, an Ask's
``summary.json``) and ``status --live`` with a ``ponder server`` running; last, with the server
up, ``status`` of a live tournament (paused on its budget) that the home's background worker
serves, so the query needs no worker of the command's own.

    python -m benchmarks.cli_latency [--repeat 7] [--smoke]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.ask_latency import foreground_server, ponder_env

RUN_ID = "bench-ask"
THINK_ID = "bench-think"
THINK_RUN = [
    "think",
    "Sort a list",
    "--profile",
    "quick",
    "--provider",
    "sim",
    "--run-id",
    THINK_ID,
]
"""An ended tournament: ``status`` shows its stored progress (``progress.json``), server or not."""
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PLAN_ID = "bench-plan"
PLAN_RUN = [
    *("plan", "run", str(EXAMPLES / "plans" / "set-values.yaml"), "--run-id", PLAN_ID),
    *("--arg", "pages=12", "--arg", "audience=engineers"),
]
CAMPAIGN_ID = "bench-campaign"
CAMPAIGN_RUN = [
    *("campaign", "run", str(EXAMPLES / "campaigns" / "deep-vs-single-small.yaml")),
    *("--run-id", CAMPAIGN_ID),
]
LIVE_ID = "bench-live"
LIVE_RUN = [
    # Retried judge calls spend the plan's 15 calls early: the run pauses, live, on its budget.
    *("think", "Sort a list", "--seed", "4", "--model", "sim:default,invalid_json_rate=0.5"),
    *("--invalid-json-retries", "3", "--max-calls", "15", "--run-id", LIVE_ID, "--detach"),
]
DOWN = [
    ["--version"],
    ["--help"],
    ["think", "--help"],
    ["rank", "--help"],
    ["mutate", "--help"],
    ["profile", "save", "--help"],
    ["plan", "run", "--help"],
    ["plan", "validate", str(EXAMPLES / "plans" / "set-values.yaml")],  # no server: the validator
    ["status", "--help"],
    ["status", RUN_ID],
    ["status", THINK_ID],
    ["status", PLAN_ID],
    ["status", CAMPAIGN_ID],
    ["runs"],
    ["report", RUN_ID],
    ["export", RUN_ID],
]
UP = [
    ["status", RUN_ID],
    ["status", THINK_ID],
    ["status", PLAN_ID],
    ["status", CAMPAIGN_ID],
    ["status", RUN_ID, "--live"],
    ["runs", "--live"],
]


def wall(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-800:]}")
    return elapsed


def ponder(*args: str) -> list[str]:
    return [sys.executable, "-m", "client", *args]


def measure(argv: list[str], env: dict[str, str], repeat: int) -> float:
    return statistics.median(wall(argv, env) for _ in range(repeat))


def with_server(home: Path, env: dict[str, str], repeat: int) -> list[tuple[str, float]]:
    with foreground_server(ponder("server"), env):
        try:
            rows = [
                (f"ponder {' '.join(a)} (server up)", measure(ponder(*a), env, repeat)) for a in UP
            ]
            wall(ponder(*LIVE_RUN), env)
            live = measure(ponder("status", LIVE_ID), env, repeat)
            return [*rows, (f"ponder status {LIVE_ID} (live, worker up)", live)]
        finally:
            _stop_background_worker(home)


WORKER_EXIT_S = 30.0


def _stop_background_worker(home: Path) -> None:
    """SIGTERM the home's background workers (one per configuration: ``workers/<queue>.json``)
    and wait for them to go: while one lives it holds a lease that restarts the server, and it
    writes under the home the benchmark removes."""
    pids = []
    for record in (home / "workers").glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pids.append(int(json.loads(record.read_text())["pid"]))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + WORKER_EXIT_S
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="repetitions per command")
    parser.add_argument("--smoke", action="store_true", help="one repetition, for the test suite")
    args = parser.parse_args()
    repeat = 1 if args.smoke else args.repeat
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        home = Path(tmp) / "home"
        env = ponder_env(home)  # the server stops with the Ask: the reads find it down
        wall(ponder("ask", "What is durable execution?", "--run-id", RUN_ID), env)
        for made in (THINK_RUN, PLAN_RUN, CAMPAIGN_RUN):
            wall(ponder(*made), env)
        rows = [("python -c pass", measure([sys.executable, "-c", "pass"], env, repeat))]
        rows += [(f"ponder {' '.join(a)}", measure(ponder(*a), env, repeat)) for a in DOWN]
        if (home / "server.json").exists():
            raise SystemExit("a read of an ended run started the embedded server")
        rows += with_server(home, env, repeat)
    load = os.getloadavg()[0]
    print(
        f"\nponder command wall time, median of {repeat}, load {load:.1f}, {os.cpu_count()} cores\n"
    )
    print(f"{'command':<44} {'median s':>9}")
    for name, median in rows:
        print(f"{name:<44} {median:>9.3f}")


if __name__ == "__main__":
    main()
