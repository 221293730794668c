"""A quick tournament's wall time with the server up, against an in-process reference.

Ponder: ``ponder think --profile quick`` (15 calls in 4 rounds: 4 generations, 4 judgements, 3
mutations, 4 final judgements) on ``sim`` with a fixed 20 ms per call, the embedded server
running and, as after any command with an idle period, the configuration's background worker
lingering: the command is a client (start, follow, print) and the run still goes through
Temporal and a worker. ``--no-linger`` runs each command with no idle period instead, so each
runs its own worker in process. ``--sdk`` starts and follows each through the SDK client, the
path a served run took before it went over the server's HTTP API: a before and after measured in
the same minutes.

Reference: what an in-process tool does for the same schedule, as its own process: the
interpreter, its imports (httpx, pydantic) and 15 HTTP calls in the same 4 rounds against a
local endpoint answering in 20 ms (served by this process). Both are whole-process wall times,
interleaved, so the ratio holds on a busy machine; nothing is asserted.

    python -m benchmarks.quick_latency [--repeat 5] [--no-linger] [--sdk] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.ask_latency import (
    foreground_server,
    ponder_env,
    run_ponder,
    stop_background_workers,
)

LATENCY_S = 0.02
ROUNDS = (4, 4, 3, 4)
THINK = [
    *("think", "Sort a list", "--profile", "quick", "--provider", "sim"),
    *("--model", f"sim:default,latency=fixed:{int(LATENCY_S * 1000)}"),
]
BODY = (
    b'{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":'
    b'{"role":"assistant","content":"an answer"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}'
)
REFERENCE = """
import asyncio, sys, httpx, pydantic
async def main(url, rounds):
    async with httpx.AsyncClient() as http:
        for n in rounds:
            await asyncio.gather(*(
                http.post(url, json={"model": "m", "messages": [{"role": "user", "content": "q"}]})
                for _ in range(n)
            ))
asyncio.run(main(sys.argv[1], [int(n) for n in sys.argv[2:]]))
"""


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            await asyncio.sleep(LATENCY_S)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(BODY)}\r\n\r\n".encode()
                + BODY
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def local_endpoint() -> str:
    """An OpenAI-compatible chat endpoint answering every call after ``LATENCY_S``."""
    ready: list[str] = []
    started = threading.Event()

    async def serve() -> None:
        server = await asyncio.start_server(_answer, "127.0.0.1", 0)
        ready.append(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions")
        started.set()
        await server.serve_forever()

    threading.Thread(target=asyncio.run, args=(serve(),), daemon=True).start()
    started.wait(10)
    return ready[0]


def reference(url: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", REFERENCE, url, *map(str, ROUNDS)], check=True, capture_output=True
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions of each")
    parser.add_argument("--no-linger", action="store_true", help="no idle period: own worker")
    parser.add_argument("--sdk", action="store_true", help="follow through the SDK client")
    parser.add_argument("--smoke", action="store_true", help="one repetition, for the tests")
    args = parser.parse_args()
    repeat = 1 if args.smoke else args.repeat
    env = {"PONDER_SERVER_IDLE_S": "0" if args.no_linger else "60"}
    url = local_endpoint()
    ponder: list[float] = []
    inproc: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        home = Path(tmp)
        if args.sdk:  # a secrets file: a served run's HTTP path leaves its command to the SDK
            (home / "secrets.env").write_text("")
            env["PONDER_SECRETS_FILE"] = str(home / "secrets.env")
        with foreground_server([sys.executable, "-m", "client", "server"], ponder_env(home)):
            try:
                run_ponder(home, *THINK, env=env)  # the server's first run; leaves the worker
                for _ in range(repeat):
                    inproc.append(reference(url))
                    ponder.append(run_ponder(home, *THINK, env=env))
            finally:
                stop_background_workers(home)
                time.sleep(1)
    mode = "own worker per command" if args.no_linger else "background worker up"
    mode += ", through the SDK" if args.sdk else ""
    print(f"\nquick tournament, server up ({mode}), {repeat} repetitions, 20 ms calls\n")
    print(f"{'':<24} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, times in (("in-process reference", inproc), ("ponder think", ponder)):
        print(f"{name:<24} {statistics.median(times):>9.2f} {min(times):>7.2f} {max(times):>7.2f}")
    print(f"\nratio (medians): {statistics.median(ponder) / statistics.median(inproc):.2f}x")


if __name__ == "__main__":
    main()
