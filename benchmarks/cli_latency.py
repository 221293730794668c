"""How long ``ponder`` commands take to answer: each command's median wall time next to
``python -c pass`` (the interpreter's own start on this machine).

One sim run of each kind is made first (an Ask, a quick tournament, a plan, a small campaign);
the reads then run with the embedded server down (the run store answers: no server starts),
then each ended run's ``status`` (its stored view again: ``progress.json``, an Ask's
``summary.json``), ``status --live``, ``runs`` (the server's list read over its HTTP API),
``report`` and a refusal with a ``ponder server`` running; then, with the server up, ``status``
of a live tournament (paused on its budget) that the home's background worker serves, so the
query needs no worker of the command's own; last, ``ponder mcp`` ready: started, its answers to
``initialize`` and ``tools/list`` read (a client's handshake over stdio).

    python -m benchmarks.cli_latency [--repeat 7] [--smoke]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
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
REFUSAL = ["profile", "show", "no-such-profile"]
"""A refusal (exit 2): the name is neither built-in nor saved."""
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
    ["report", CAMPAIGN_ID],
    ["export", RUN_ID],
    REFUSAL,
]
UP = [
    ["status", RUN_ID],
    ["status", THINK_ID],
    ["status", PLAN_ID],
    ["status", CAMPAIGN_ID],
    ["status", RUN_ID, "--live"],
    ["runs"],
    ["runs", "--live"],
    ["report", CAMPAIGN_ID],
    REFUSAL,
]


def wall(argv: list[str], env: dict[str, str]) -> float:
    return timed(argv, env)[0]


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The command's wall seconds and its process's CPU seconds (user and system): the CPU
    figure holds on a loaded machine, where the wall one mostly measures the others' load."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != (2 if argv[-len(REFUSAL) :] == REFUSAL else 0):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-800:]}")
    return elapsed, _children_cpu() - cpu


def ponder(*args: str) -> list[str]:
    return [sys.executable, "-m", "client", *args]


Row = tuple[str, float, float | None]
"""A command, its median wall seconds and its median CPU seconds (None: not measured)."""


def measure(name: str, argv: list[str], env: dict[str, str], repeat: int) -> Row:
    walls, cpus = zip(*(timed(argv, env) for _ in range(repeat)), strict=True)
    return name, statistics.median(walls), statistics.median(cpus)


def with_server(home: Path, env: dict[str, str], repeat: int) -> list[Row]:
    with foreground_server(ponder("server"), env):
        try:
            rows = [
                measure(f"ponder {' '.join(a)} (server up)", ponder(*a), env, repeat) for a in UP
            ]
            wall(ponder(*LIVE_RUN), env)
            live = measure(f"ponder status {LIVE_ID} (live, worker up)", ponder("status", LIVE_ID),
                           env, repeat)  # fmt: skip
            ready = statistics.median(mcp_ready(env) for _ in range(repeat))
            return [*rows, live, ("ponder mcp: initialize + tools/list", ready, None)]
        finally:
            _stop_background_worker(home)


HANDSHAKE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "cli_latency", "version": "0"},
    },
}


def mcp_ready(env: dict[str, str]) -> float:
    """Seconds from starting ``ponder mcp`` to its answer to ``tools/list``, after the
    ``initialize`` a client sends first (and its ``initialized`` notification)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        ponder("mcp"), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        for message in (
            HANDSHAKE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ):
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            if "id" in message:
                answer = json.loads(process.stdout.readline())
                if "result" not in answer:
                    raise SystemExit(f"ponder mcp answered {answer}")
        elapsed = time.perf_counter() - started
    finally:
        process.stdin.close()  # the client leaves: the server ends
        process.wait(WORKER_EXIT_S)
    return elapsed


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
        rows = [measure("python -c pass", [sys.executable, "-c", "pass"], env, repeat)]
        rows += [measure(f"ponder {' '.join(a)}", ponder(*a), env, repeat) for a in DOWN]
        if (home / "server.json").exists():
            raise SystemExit("a read of an ended run started the embedded server")
        rows += with_server(home, env, repeat)
    load = os.getloadavg()[0]
    print(
        f"\nponder command wall time, median of {repeat}, load {load:.1f}, {os.cpu_count()} cores\n"
    )
    print(f"{'command':<52} {'median s':>9} {'cpu s':>7}")
    for name, median, cpu in rows:
        shown = "-" if cpu is None else f"{cpu:.3f}"
        print(f"{name:<52} {median:>9.3f} {shown:>7}")


if __name__ == "__main__":
    main()
