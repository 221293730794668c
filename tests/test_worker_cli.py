"""``ponder worker`` as a real process, and ``ponder ask --detach`` with its background worker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Settings
from tests.cli import Done, cli_env, finish, one_server, ponder
from tests.fakes import FakeProvider
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


async def start_worker(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_line(process: asyncio.subprocess.Process, needle: str, timeout: float) -> str:
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {needle!r} on stderr within {timeout}s: {seen}"
        line = (await asyncio.wait_for(process.stderr.readline(), remaining)).decode()
        assert line, f"the worker exited before printing {needle!r}: {seen}"
        seen.append(line)
        if needle in line:
            return line


def one_line(done: Done) -> str:
    assert "Traceback" not in done.err
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    return lines[0]


def processes_using(home: Path) -> list[int]:
    """Pids of live processes whose environment has ``PONDER_HOME=home`` (ours only)."""
    needle = f"PONDER_HOME={home}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in environ and state != "Z":
            pids.append(int(proc.name))
    return pids


def cmdline(pid: int) -> list[str]:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


async def wait_until(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.1)


async def test_worker_polls_serves_an_ask_and_stops_on_sigterm(
    client: Client, settings: Settings, server_address: str
) -> None:
    queue = f"test-{uuid.uuid4()}"
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address)
    worker = await start_worker("--task-queue", queue, env=env)
    try:
        await wait_for_line(worker, f"polling {queue!r}", 90)  # a process start under load
        run_id = f"ask-{uuid.uuid4().hex[:8]}"
        result = await client.execute_workflow(
            ASK,
            AskInput(question="Who serves this?", run_id=run_id),
            id=run_id,
            task_queue=queue,
            result_type=AskResult,
            execution_timeout=timedelta(seconds=60),
        )
        assert result.response.simulated
        # The worker process wrote the run directory of the home it was given.
        answer = settings.runs_dir / run_id / "artifacts/answer.txt"
        assert Path(result.answer_path) == answer.resolve()
        assert Path(result.answer_path).read_text() == result.response.text
        started = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        done = await finish(worker, timeout=15)
        assert done.code == 0, done.err
        assert time.monotonic() - started < 10
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()


async def test_bad_rate_limit_is_one_line_exit_2(tmp_path: Path, server_address: str) -> None:
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address)
    worker = await start_worker(
        "--task-queue", f"test-{uuid.uuid4()}", "--rate-limit", "bad", env=env
    )
    done = await finish(worker, timeout=30)
    assert done.code == 2
    line = one_line(done)
    assert "option.invalid: --rate-limit 'bad'" in line
    assert "PROVIDER=N/s" in line


async def test_python_m_worker_serves_a_cluster_and_says_so_without_one(tmp_path: Path) -> None:
    """The worker's own entry point imports no client: no embedded server, one coded line."""
    done = await finish(await start_worker(env=cli_env(tmp_path)), timeout=30)
    assert done.code == 2
    line = one_line(done)
    assert line.startswith("python -m worker: server.unavailable: "), line
    assert "TEMPORAL_ADDRESS" in line and "ponder worker" in line
    assert not (tmp_path / "server.json").exists()
    usage = await finish(await start_worker("--no-such-flag", env=cli_env(tmp_path)), timeout=30)
    assert usage.code == 2 and one_line(usage).startswith("python -m worker: usage.invalid: ")


async def test_exit_when_idle_exits_by_itself(tmp_path: Path, server_address: str) -> None:
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address)
    worker = await start_worker(
        "--task-queue", f"test-{uuid.uuid4()}", "--exit-when-idle", "1", env=env
    )
    try:
        done = await finish(worker, timeout=120)  # a ceiling for a loaded machine, not a goal
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()
    assert done.code == 0, done.err
    assert "idle; exiting" in done.err


async def test_ask_detach_prints_the_id_and_a_background_worker_finishes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home)
    run_id = f"detached-{uuid.uuid4().hex[:8]}"
    try:
        done = await ponder("ask", "Finish without me", "--detach", "--run-id", run_id, env=env)
        assert done.code == 0, done.err
        assert done.out.strip() == run_id
        summary = home / "runs" / run_id / "summary.json"
        await wait_until(summary.exists, 60)
        assert json.loads(summary.read_text())["status"] == "completed"
        assert "[sim q=" in (home / "runs" / run_id / "artifacts/answer.txt").read_text()
        workers = [pid for pid in processes_using(home) if "worker" in cmdline(pid)]
        assert len(workers) == 1, [cmdline(pid) for pid in processes_using(home)]
        (worker,) = workers
        assert "--exit-when-idle" in cmdline(worker)
        os.kill(worker, signal.SIGTERM)
        # The worker held the last lease: the embedded server goes with it.
        await wait_until(lambda: processes_using(home) == [], 90)  # a loaded stop: over 30 s in CI
        assert not (home / "server.json").exists()
    finally:
        for pid in processes_using(home):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_a_gone_worker_is_noticed_within_seconds(
    tmp_path: Path, server_address: str, client: Client
) -> None:
    from temporalio.api.workflowservice.v1 import ListWorkersRequest

    from client.session import has_worker
    from tests.cli import start_ponder

    queue = f"test-{uuid.uuid4()}"
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
    request = ListWorkersRequest(namespace=client.namespace, query=f"TaskQueue = '{queue}'")

    async def second_heartbeat_seen() -> bool:
        listed = await client.workflow_service.list_workers(request)
        return any(
            info.worker_heartbeat.elapsed_since_last_heartbeat.ToTimedelta().total_seconds()
            for info in listed.workers_info
        )

    worker = await start_worker("--task-queue", queue, env=env)
    try:
        await wait_for_line(worker, f"polling {queue!r}", 90)  # a process start under load
        served = await ponder("ask", "anyone there?", env=env, timeout=60)
        assert served.code == 0, served.err
        # Two heartbeats sent: a first one reports no interval, and a worker whose interval is
        # unknown is given the SDK's longest (60 s) before it counts as gone.
        await wait_for(second_heartbeat_seen, 60)
    finally:
        worker.kill()
        await worker.wait()
    gone = time.monotonic()
    # Two heartbeat intervals and slack, where the server lists a gone worker's pollers 5 min.
    try:
        await wait_for(lambda: _gone(has_worker(client, queue)), 60)
    except AssertionError:
        raise AssertionError(
            f"still taken as live after {time.monotonic() - gone:.0f}s: "
            f"{await client.workflow_service.list_workers(request)}"
        ) from None
    asking = await start_ponder("ask", "and now?", env=env)
    try:
        refused = await finish(asking, timeout=60)
    finally:
        if asking.returncode is None:
            asking.kill()
    assert refused.code == 2, refused.err
    assert "no worker polls task queue" in one_line(refused)


async def test_a_provider_added_after_a_detach_is_served_by_a_worker_that_has_it(
    tmp_path: Path, fake: FakeProvider
) -> None:
    """After a ``--detach`` the home's background worker polls the queue for ten
    minutes; a provider added to ponder.toml since must not meet that worker's old
    configuration ("unknown provider 'local' ... add [providers.NAME]")."""
    home = tmp_path / "home"
    home.mkdir()
    env = cli_env(home)
    try:
        async with one_server(home):
            first = await ponder("ask", "Before any config", "--detach", env=env)
            assert first.code == 0, first.err
            (old,) = [pid for pid in processes_using(home) if "worker" in cmdline(pid)]
            (home / "ponder.toml").write_text(
                f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}/v1"\n'
            )
            # Detached, the run has no worker but the background one: before the fix, always the
            # old one. Followed, the command's own worker and the old one both poll the queue.
            detached = f"ask-{uuid.uuid4().hex[:8]}"
            args = ("--model", "local:qwen", "--detach", "--run-id", detached)
            done = await ponder("ask", "Through local, detached", *args, env=env)
            assert done.code == 0, done.err
            summary = home / "runs" / detached / "summary.json"
            await wait_until(summary.exists, 60)
            assert json.loads(summary.read_text())["status"] == "completed", summary.read_text()
            for n in range(3):
                done = await ponder("ask", f"Through local {n}", "--model", "local:qwen", env=env)
                assert done.code == 0, done.err
                assert "unknown provider" not in done.err
            assert [s.body["model"] for s in fake.seen] == ["qwen"] * 4
            # The old worker polls on, its own configuration's queue, never the new one's.
            polled = {
                pid: argv[argv.index("--task-queue") + 1]
                for pid in processes_using(home)
                if "--exit-when-idle" in (argv := cmdline(pid))
            }
            assert old in polled and len(set(polled.values())) == 2, polled

            # A detached run given --config is served by a worker that loaded that file.
            other = tmp_path / "other.toml"
            other.write_text(
                f'[providers.elsewhere]\nkind = "openai"\nbase_url = "{fake.url}/v1"\n'
            )
            run_id = f"ask-{uuid.uuid4().hex[:8]}"
            args = ("--model", "elsewhere:m2", "--detach", "--run-id", run_id)
            done = await ponder("--config", str(other), "ask", "Detached elsewhere", *args, env=env)
            assert done.code == 0, done.err
            summary = home / "runs" / run_id / "summary.json"
            await wait_until(summary.exists, 60)
            assert json.loads(summary.read_text())["status"] == "completed"
            assert fake.seen[-1].body["model"] == "m2"
    finally:
        for pid in processes_using(home):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def _gone(live: Awaitable[bool]) -> bool:
    return not await live


async def wait_for(condition: Callable[[], Awaitable[bool]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"not true within {timeout:.0f} s"
        await asyncio.sleep(0.5)
