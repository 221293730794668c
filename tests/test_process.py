"""Processes: SIGTERM hands over like Ctrl-C, foreground runs survive a server restart, one
server per database, one background worker per home, clean exits."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from client.embedded import EmbeddedServer, _free_port, find_temporal_binary, server_answers
from tests.cli import cli_env, finish, ponder, start_ponder
from tests.test_embedded import server_pids, wait_until
from tests.test_worker_cli import cmdline, processes_using

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]

SLOW_SIM = "sim:default,latency=fixed:1500"


def background_workers(home: Path) -> list[int]:
    return [pid for pid in processes_using(home) if "--exit-when-idle" in cmdline(pid)]


def completed(summary: Path) -> bool:
    try:
        return bool(json.loads(summary.read_text())["status"] == "completed")
    except (OSError, ValueError):
        return False


def run_dirs(home: Path) -> list[Path]:
    runs = home / "runs"
    return list(runs.iterdir()) if runs.is_dir() else []


async def stop_background_workers(home: Path) -> None:
    """SIGTERM them and wait for them to go: a worker lets calls in flight finish and stops the
    server it was the last user of, which took over 30 s on a loaded CI machine (1.2 s idle,
    1.2-1.4 s with six at once beside six busy loops on two cores)."""
    for pid in background_workers(home):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 150
    while processes_using(home):
        # Seen once in a full suite (not reproduced alone or under load): say what was left.
        assert time.monotonic() < deadline, left_behind(home)
        await asyncio.sleep(0.1)


def left_behind(home: Path) -> str:
    """The processes still using ``home`` (command line, state, threads) and the background
    worker's log tail."""
    lines = []
    for pid in processes_using(home):
        with contextlib.suppress(OSError):
            status = dict(
                line.split(":\t", 1)
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ":\t" in line
            )
            lines.append(
                f"{pid} {cmdline(pid)} {status.get('State')} threads={status.get('Threads')}"
            )
    log = home / "logs" / "background-worker.out"
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no worker log)"
    return "\n".join(["still running:", *lines, "background worker log:", tail])


async def waits_on(home: Path, pid: int, run_id: str) -> bool:
    """Whether process ``pid``'s in-process worker polls and run ``run_id`` exists.

    A lease file is written before the server is even checked; a poller comes after the
    server, the client and the worker are up, and the run once it was started: the command
    then waits on it (its detaching handler installed) within a few RPCs. A command that finds
    its configuration's background worker runs none of its own (a client only): for it, its
    lease and the run stand in for the poller (the caller's pause covers the RPCs between).
    """
    server = EmbeddedServer(home)
    info = server.read_state()
    if info is None:
        return False
    if background_workers(home) and (server.leases / str(pid)).exists():
        try:
            client = await Client.connect(info.address)
            await client.get_workflow_handle(run_id).describe()
        except (RPCError, RuntimeError):
            return False
        await asyncio.sleep(1.0)  # its connect and first RPC, past the lease
        return True
    try:
        client = await Client.connect(info.address)
        # The command's configuration's queue (``ponder.<digest>``): the run's own.
        queue = (await client.get_workflow_handle(run_id).describe()).task_queue
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace="default",
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        if not any(p.identity.startswith(f"{pid}@") for p in described.pollers):
            return False
    except (RPCError, RuntimeError):  # not started yet, or a restarting server
        return False
    return True


async def wait_waiting(home: Path, pid: int, run_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not await waits_on(home, pid, run_id):
        assert time.monotonic() < deadline, f"process {pid} never waited on {run_id}"
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)  # its few RPCs into the wait


async def sigterm_detaches(home: Path, run_id: str, *args: str) -> str:
    """Run ``ponder ARGS --run-id RUN_ID``, SIGTERM it while it waits, check it hands over."""
    env = cli_env(home)
    waiting = await start_ponder(*args, "--run-id", run_id, env=env)
    await wait_waiting(home, waiting.pid, run_id)
    assert waiting.returncode is None
    sent = time.monotonic()
    waiting.send_signal(signal.SIGTERM)
    done = await finish(waiting, timeout=30)
    assert time.monotonic() - sent < 8, "SIGTERM took too long"
    assert done.code == 0, done.err
    assert "detached; the run goes on" in done.err
    # A client-only command (its configuration's background worker took the run) logs nothing.
    logs = [home / "logs" / "worker.log", home / "logs" / "background-worker.out"]
    log = "".join(path.read_text(errors="replace") for path in logs if path.exists())
    for text in (done.err, log):
        assert "SystemExit" not in text and "Traceback" not in text, text[-2000:]
    return done.err


async def test_sigterm_on_think_hands_over_and_the_run_completes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await sigterm_detaches(home, "t1", "think", "sort a list", "--model", SLOW_SIM)
    summary = home / "runs" / "t1" / "summary.json"
    await wait_until(lambda: completed(summary), 90)
    assert len(background_workers(home)) == 1
    assert len(server_pids(home / "temporal.db")) == 1
    await stop_background_workers(home)
    assert not (home / "server.json").exists()


async def test_sigterm_on_watch_and_ask_detaches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home)
    # Slow enough that the run cannot end before the watcher is signalled, however loaded.
    slower = "sim:default,latency=fixed:20000"
    started = await ponder("think", "x", "--model", slower, "--run-id", "w1", "--detach", env=env)
    assert started.code == 0, started.err
    watcher = await start_ponder("watch", "w1", env=env)
    # Past start-up: a SIGTERM before it follows the run is a plain termination (exit 143).
    await wait_waiting(home, watcher.pid, "w1")
    watcher.send_signal(signal.SIGTERM)
    done = await finish(watcher, timeout=15)
    assert done.code == 0 and "detached" in done.err, done.err
    await sigterm_detaches(home, "a1", "ask", "hi", "--model", slower)
    # Both hand-overs reused the one background worker.
    assert len(background_workers(home)) == 1
    await stop_background_workers(home)


async def test_foreground_think_survives_a_server_kill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home)
    run = await start_ponder("think", "x", "--model", SLOW_SIM, "--run-id", "k1", env=env)
    await wait_until(lambda: bool(run_dirs(home)), 60)
    await asyncio.sleep(1.0)
    old = json.loads((home / "server.json").read_text())
    # Keep it down for a while: holding server.lock stalls the lease holder's restart, so the
    # command's waits see an unavailable server for longer than the SDK's own retries last.
    with (home / "server.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.kill(old["pid"], signal.SIGKILL)
        await asyncio.sleep(20)
        assert run.returncode is None, (await finish(run)).err[-3000:]
        fcntl.flock(lock, fcntl.LOCK_UN)
    done = await finish(run, timeout=120)
    assert done.code == 0, done.err[-3000:]
    assert "winner" in done.err
    assert json.loads((home / "runs/k1/summary.json").read_text())["status"] == "completed"
    assert not (home / "server.json").exists()
    await wait_until(lambda: not server_pids(home / "temporal.db"), 60)  # a loaded stop


async def test_a_stray_server_on_the_database_is_adopted_not_doubled(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(parents=True)
    db = home / "temporal.db"
    ports = [str(_free_port()) for _ in range(4)]
    # A server on our database that server.json does not name (an interrupted start).
    stray = subprocess.Popen(
        [
            *(find_temporal_binary(), "server", "start-dev", "--db-filename", str(db)),
            *("--ip", "127.0.0.1", "--port", ports[0], "--ui-port", ports[1]),
            *("--http-port", ports[2], "--metrics-port", ports[3], "--log-level", "error"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not await server_answers(f"127.0.0.1:{ports[0]}"):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.2)
        run = await start_ponder("ask", "hi", "--model", SLOW_SIM, env=cli_env(home))
        await wait_until((home / "server.json").exists, 60)
        assert json.loads((home / "server.json").read_text())["pid"] == stray.pid
        assert server_pids(db) == [stray.pid]
        done = await finish(run)
        assert done.code == 0, done.err
        # The last lease holder stops the adopted server like its own.
        await wait_until(lambda: stray.poll() is not None, 60)
        assert server_pids(db) == []
    finally:
        if stray.poll() is None:
            stray.kill()
        stray.wait()


def environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


async def test_detached_runs_share_one_worker_and_keys_stay_where_needed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home, OPENAI_API_KEY="sk-live-0123456789", DEPLOY_TOKEN="tok-unrelated-42")
    for i in range(3):  # the first starts the background worker, the others reuse it
        done = await ponder("ask", f"q{i}", "--detach", env=env)
        assert done.code == 0, done.err
    (worker,) = background_workers(home)
    # The worker may call OpenAI (a configured endpoint's key); nothing else secret reaches it.
    assert environ(worker)["OPENAI_API_KEY"] == "sk-live-0123456789"
    assert "DEPLOY_TOKEN" not in environ(worker)
    # `ponder` set one BLAS thread before anything imported numpy (worker.numerics); the worker
    # it started has it from the start.
    assert "OPENBLAS_NUM_THREADS" not in env
    assert environ(worker)["OPENBLAS_NUM_THREADS"] == "1"
    # The dev server never needs a key.
    (server,) = server_pids(home / "temporal.db")
    assert not {"OPENAI_API_KEY", "DEPLOY_TOKEN"} & set(environ(server))
    await stop_background_workers(home)


SCRIPT = """
import asyncio, gc, json, os, sys, uuid
import activities.call_model, client.cli, workflows.tournament.workflow  # the project's modules
from activities.config import load_settings
from client.connect import connect
from workflows.ask_types import AskInput
from workflows.names import ASK


async def main() -> None:
    client = await connect(load_settings(), sys.argv[1])
    run_id = f"script-{uuid.uuid4().hex[:8]}"
    await client.start_workflow(
        ASK, AskInput(question="hi", run_id=run_id), id=run_id, task_queue=sys.argv[2]
    )


# The imports are most of a script's cost, so they happen once and each run is a fork that
# connects and then exits through the interpreter's normal finalization, as a script does.
# Forking is only safe before the SDK starts its Rust threads: nothing may run here yet.
# gc.freeze keeps each child's collections (and copy-on-write) off the imported modules.
assert len(os.listdir("/proc/self/task")) == 1, "threads before fork"
gc.freeze()
codes = []
for _ in range(int(sys.argv[3])):
    pid = os.fork()
    if pid == 0:
        asyncio.run(main())
        sys.exit(0)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps(codes))
"""

# Without the hook about 1 fork in 8 aborts (measured 14 of 120): 20 runs miss that 7% of the
# time, as the 12 separate scripts this replaced did at their 1 in 5.
RUNS = 20


async def test_a_script_that_connects_exits_cleanly(tmp_path: Path, server_address: str) -> None:
    """Before the exit hook in client/connect.py about 1 script in 5 aborted (exit 134)."""
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parent.parent
    # One BLAS thread (scipy's, imported by the CLI), so the process has no thread at fork.
    env = {**cli_env(tmp_path / "home"), "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        server_address,
        "nobody-polls-this",
        str(RUNS),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-2000:]
    assert b"Fatal Python error" not in err, err.decode()[-2000:]
    assert json.loads(out) == [0] * RUNS


async def test_sigterm_on_cancel_hands_the_cancellation_over(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home)
    slow = "sim:default,latency=fixed:4000"
    started = await ponder("think", "x", "--model", slow, "--run-id", "c1", "--detach", env=env)
    assert started.code == 0, started.err
    (worker,) = background_workers(home)
    os.kill(worker, signal.SIGKILL)  # so the cancelling command's own worker does the work
    canceller = await start_ponder("cancel", "c1", env=env)
    await wait_waiting(home, canceller.pid, "c1")
    canceller.send_signal(signal.SIGTERM)
    done = await finish(canceller, timeout=20)
    assert done.code == 143, done.err
    assert "Traceback" not in done.err and "SystemExit" not in done.err
    # The cancellation goes on in a background worker and the run ends CANCELED.
    summary = home / "runs" / "c1" / "summary.json"
    await wait_until(
        lambda: summary.exists() and json.loads(summary.read_text())["status"] == "cancelled", 90
    )
    await stop_background_workers(home)


async def test_an_interrupted_start_leaves_no_server_behind(tmp_path: Path) -> None:
    """A start cut short (a signal, a cancelled watchdog) once left an unrecorded server on
    the database, and the next start added a second one on other ports."""
    server = EmbeddedServer(tmp_path / "home")
    starting = asyncio.ensure_future(server.ensure())
    await wait_until(lambda: bool(server_pids(server.db)), 30)  # spawned, not yet answering
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    assert server_pids(server.db) == []
    assert server.read_state() is None
