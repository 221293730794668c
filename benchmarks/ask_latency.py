"""``ponder ask`` wall time, cold (fresh home: server start + worker + one sim call) vs warm.

Cold: every repetition uses a fresh ``$PONDER_HOME``, so the process starts the embedded
Temporal server, runs its in-process worker, makes one ``sim`` call and, as the last lease
holder, stops the server again. Warm: a ``ponder server`` already runs in the home, so the
process only connects, runs its worker and makes the call (no idle period: no worker lingers).
Served: the server runs and, as after any command with an idle period, so does the
configuration's background worker, so the process is a client only: start, wait, print.
The startup floor is ``ponder --help`` (Python and imports only). Whole-process wall times;
nothing is asserted.

    python -m benchmarks.ask_latency [--repeat 3] [--modes served,warm]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

QUESTION = "What is durable execution?"
READY_TIMEOUT_S = 60.0


def ponder_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "PONDER_"))}
    env["PONDER_HOME"] = str(home)
    # Each repetition measures its own server start: no server lingers for the next one.
    env["PONDER_SERVER_IDLE_S"] = "0"
    return env


def run_ponder(home: Path, *args: str, env: dict[str, str] | None = None) -> float:
    """Wall seconds of one ``ponder`` process; fails loudly if the command fails."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "client", *args],
        env={**ponder_env(home), **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ponder {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return elapsed


def cold(root: Path, repeat: int) -> list[float]:
    times = []
    for i in range(repeat):
        home = root / f"cold-{i}"
        times.append(run_ponder(home, "ask", QUESTION))
        if (home / "server.json").exists():
            raise SystemExit(f"the embedded server in {home} outlived the last ponder process")
    return times


@contextlib.contextmanager
def foreground_server(argv: list[str], env: dict[str, str]) -> Iterator[None]:
    """``ponder server`` in the foreground for the block: up once it prints its Web UI line,
    stopped with SIGINT (killed after 30 s) on leaving."""
    server = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert server.stdout is not None
        for line in server.stdout:
            if line.startswith("Web UI"):
                break
            if time.monotonic() > deadline:
                raise SystemExit("ponder server did not come up")
        else:
            raise SystemExit(f"ponder server exited {server.wait()}")
        yield
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def warm(root: Path, repeat: int, warm_up: bool = True) -> list[float]:
    """``warm_up``: one uncounted ask first (the server's first workflow); ``--smoke`` skips it."""
    home = root / "warm"
    home.mkdir()
    with foreground_server([sys.executable, "-m", "client", "server"], ponder_env(home)):
        if warm_up:
            run_ponder(home, "ask", "warm-up")
        return [run_ponder(home, "ask", QUESTION) for _ in range(repeat)]


def stop_background_workers(home: Path) -> None:
    """SIGTERM every background worker the home's records name (each exits within seconds)."""
    for record in (home / "workers").glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            os.kill(int(json.loads(record.read_text())["pid"]), signal.SIGTERM)


def served(root: Path, repeat: int) -> list[float]:
    """Server up and the configuration's background worker lingering (an idle period, as a
    user's commands have): the warm-up ask leaves the worker, each measured ask is a client."""
    home = root / "served"
    home.mkdir()
    env = {"PONDER_SERVER_IDLE_S": "60"}
    with foreground_server([sys.executable, "-m", "client", "server"], ponder_env(home)):
        try:
            run_ponder(home, "ask", "warm-up", env=env)
            return [run_ponder(home, "ask", QUESTION, env=env) for _ in range(repeat)]
        finally:
            stop_background_workers(home)
            time.sleep(1)  # the worker drops its lease, so the server's SIGINT stops it at once


def floor(root: Path, repeat: int) -> list[float]:
    return [run_ponder(root / "floor", "--help") for _ in range(repeat)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per mode")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    parser.add_argument(
        "--modes",
        default="floor,warm,served,cold",
        help="the modes to measure, comma-separated (floor, warm, served, cold)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    modes: dict[str, tuple[str, Callable[[Path, int], list[float]]]] = {
        "floor": ("startup floor (ponder --help)", floor),
        "warm": ("warm (ponder server running)", functools.partial(warm, warm_up=not args.smoke)),
        "served": ("served (server + bg worker)", served),
        "cold": ("cold (fresh PONDER_HOME)", cold),
    }
    chosen = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = sorted(set(chosen) - set(modes))
    if unknown:
        parser.error(f"--modes: unknown {', '.join(unknown)} (use {', '.join(modes)})")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        for mode in chosen:
            name, measure = modes[mode]
            times = measure(Path(tmp), args.repeat)
            rows.append((mode, name, statistics.median(times), min(times), max(times), len(times)))
    warm_median = next((row[2] for row in rows if row[0] == "warm"), None)
    print(f"\nponder ask wall time, sim:default, {args.repeat} repetitions per mode\n")
    print(f"{'mode':<32} {'n':>3} {'median s':>9} {'min s':>7} {'max s':>7} {'vs warm':>8}")
    for _, name, median, low, high, n in rows:
        ratio = "-" if warm_median is None else f"{median / warm_median:.2f}x"
        print(f"{name:<32} {n:>3} {median:>9.2f} {low:>7.2f} {high:>7.2f} {ratio:>8}")


if __name__ == "__main__":
    main()
