"""What every ponder process sets before it imports its modules (``worker.startup``): one BLAS
thread unless its user chose otherwise, and no cyclic garbage collection until it connects;
a command that never connects ends with none, a worker and a connected client collect."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.cli import cli_env, finish

BLAS_PROBE = """
import os, sys
from worker.startup import start_process
if sys.argv[1] == "start":
    start_process()
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def probe(code: str, *args: str, **env: str) -> list[str]:
    """What ``code`` prints in a fresh interpreter (with ``env`` over ours, less any BLAS
    setting): only a fresh process shows what its imports start."""
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.split()


def test_numpy_loaded_after_the_start_runs_one_thread() -> None:
    assert probe(BLAS_PROBE, "start") == ["1", "1"]  # the variable, and the process's only thread


def test_without_the_start_openblas_starts_a_thread_per_core() -> None:
    """What the setting saves, on this machine: OpenBLAS starts one thread per core it may use."""
    variable, threads = probe(BLAS_PROBE, "no-start")
    assert variable == "None"
    assert int(threads) == min(len(os.sched_getaffinity(0)), 64)


def test_a_users_own_blas_setting_wins() -> None:
    assert probe(BLAS_PROBE, "start", OPENBLAS_NUM_THREADS="2")[0] == "2"


GC_PROBE = """
import gc, sys
from worker.startup import start_process
if sys.argv[1] == "program-disabled":
    gc.disable()
start_process()
paused = not gc.isenabled()
from worker.connect import before_connect  # what every connect runs first
before_connect()
print(paused, gc.isenabled(), gc.get_freeze_count() > 0)
"""


def test_collection_is_paused_while_importing_and_back_once_connecting() -> None:
    # Paused from the start; on again at the first connect, with the imports frozen out of it.
    assert probe(GC_PROBE, "default") == ["True", "True", "True"]


def test_a_program_that_turned_collection_off_keeps_it_off() -> None:
    assert probe(GC_PROBE, "program-disabled") == ["True", "False", "False"]


# The real `ponder` entry point, telling on stderr whether the collector is on and the imports
# frozen: at exit, and whenever it gets SIGUSR1 (a worker, asked while it polls). os.write, not
# print: a handler that interrupts a print to the same stream would fail re-entering it.
ENTRY_PROBE = """
import gc, os, signal, sys
import worker.exits

def show(*_):
    os.write(2, f"gc {gc.isenabled()} {gc.get_freeze_count() > 0}\\n".encode())

signal.signal(signal.SIGUSR1, show)
leave = worker.exits.leave

def shown_then_left(code):
    show()
    leave(code)

worker.exits.leave = shown_then_left  # before client.cli imports it
sys.argv = ["ponder", *sys.argv[1:]]
from client.cli import main
main()
"""


async def start_probed(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ENTRY_PROBE,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_line(process: asyncio.subprocess.Process, needle: str, timeout: float) -> str:
    """The first line on ``process``'s stderr that holds ``needle``."""
    assert process.stderr is not None
    async with asyncio.timeout(timeout):
        while line := (await process.stderr.readline()).decode():
            if needle in line:
                return line
    raise AssertionError(f"{needle!r} never came: the process ended")


def gc_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("gc ")]


async def test_a_command_that_never_connects_exits_with_collection_off(tmp_path: Path) -> None:
    # A refusal before anything connects: bounded work, and its memory goes back at exit.
    done = await finish(await start_probed("profile", "show", "no-such", env=cli_env(tmp_path)))
    assert done.code == 2, done.err
    assert "profile.not_found" in done.err
    assert gc_lines(done.err) == ["gc False False"]


async def test_a_client_only_command_collects_once_it_connects(
    tmp_path: Path, server_address: str
) -> None:
    # `runs` on a cluster: it connects (no worker), lists and leaves; `watch` or `ask` would
    # go on to follow a run for as long as it takes.
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address)
    done = await finish(await start_probed("runs", "--limit", "1", env=env))
    assert done.code == 0 and "run store only" not in done.err, done.err
    assert gc_lines(done.err) == ["gc True True"]


@pytest.mark.timeout(120)
async def test_a_long_lived_worker_collects_with_its_imports_frozen(
    tmp_path: Path, server_address: str
) -> None:
    queue = f"test-{uuid.uuid4()}"
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address)
    worker = await start_probed("worker", "--task-queue", queue, env=env)
    try:
        await wait_for_line(worker, f"polling {queue!r}", 90)  # a process start under load
        worker.send_signal(signal.SIGUSR1)
        assert (await wait_for_line(worker, "gc ", 30)).strip() == "gc True True"
        worker.send_signal(signal.SIGTERM)
        done = await finish(worker, timeout=30)
        assert done.code == 0, done.err
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()


INITIALIZE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}\n'
)


@pytest.mark.timeout(120)
async def test_an_mcp_server_collects_from_its_start_connected_or_not(tmp_path: Path) -> None:
    # It answers the handshake without connecting, and could go on answering for days.
    server = await start_probed("mcp", env=cli_env(tmp_path))
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(INITIALIZE.encode())
        await server.stdin.drain()
        answer = await asyncio.wait_for(server.stdout.readline(), 90)
        assert b'"serverInfo"' in answer, answer
        server.send_signal(signal.SIGUSR1)
        assert (await wait_for_line(server, "gc ", 30)).strip() == "gc True True"
        server.stdin.close()  # the client leaves: the server ends
        done = await finish(server, timeout=60)
        assert done.code == 0, done.err
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
