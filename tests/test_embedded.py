"""The embedded default: one shared server per $PONDER_HOME, leases, restart, the real binary."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from activities.errors import ServerError
from client.embedded import (
    DISPATCH_TUNING,
    EmbeddedServer,
    ServerInfo,
    find_temporal_binary,
    server_answers,
)
from tests.cli import cli_env, finish, ponder, ponder_here, start_ponder
from tests.fakes import FakeProvider

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]


def write_config(home: Path, fake: FakeProvider) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "ponder.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\nponder_headers = true\n'
    )


async def wait_until(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.1)


async def held_port(port: int) -> socket.socket:
    """A listener on ``port``, bound as soon as a dying process lets go of it."""
    deadline = time.monotonic() + 10
    while True:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", port))
            listener.listen()
            return listener
        except OSError:
            listener.close()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.01)


def server_pids(db: Path) -> list[int]:
    """Pids of `temporal server start-dev` processes using ``db``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"start-dev" in argv and str(db).encode() in argv:
            pids.append(int(proc.name))
    return pids


async def test_two_processes_share_one_server_and_the_last_stops_it(
    tmp_path: Path, fake: FakeProvider
) -> None:
    home = tmp_path / "home"
    write_config(home, fake)
    env = cli_env(home)
    fake.hold()
    first = await start_ponder("ask", "one", "--model", "local:m", env=env)
    second = await start_ponder("ask", "two", "--model", "local:m", env=env)
    await wait_until(
        lambda: len(fake.seen) == 2 or None not in (first.returncode, second.returncode)
    )
    for early in (first, second):
        assert early.returncode is None, (await finish(early)).err
    state = json.loads((home / "server.json").read_text())
    assert server_pids(home / "temporal.db") == [state["pid"]]
    assert state["db"] == str(home / "temporal.db")
    # Started with the dispatch tuning (client/embedded.py's DISPATCH_TUNING): one pair, in order.
    argv = Path(f"/proc/{state['pid']}/cmdline").read_bytes().decode().split("\0")
    flag, value = DISPATCH_TUNING
    assert argv[argv.index(value) - 1] == flag
    assert sorted(int(p.name) for p in (home / "leases").iterdir()) == sorted(
        [first.pid, second.pid]
    )
    fake.resume()
    assert (await finish(first)).code == 0
    assert (await finish(second)).code == 0
    assert not (home / "server.json").exists()
    await wait_until(lambda: not server_pids(home / "temporal.db"), 60)  # a loaded stop


async def test_server_killed_mid_run_restarts_and_the_run_completes(
    tmp_path: Path, fake: FakeProvider
) -> None:
    home = tmp_path / "home"
    write_config(home, fake)
    env = cli_env(home)
    keeper = await start_ponder("server", env=env)  # keeps the server up for `temporal` below
    await wait_until(lambda: (home / "server.json").exists())
    fake.hold()
    run = await start_ponder(
        "ask", "survive", "--model", "local:m", "--run-id", "survivor", env=env
    )
    await wait_until(lambda: len(fake.seen) == 1)
    old = json.loads((home / "server.json").read_text())
    os.kill(old["pid"], signal.SIGKILL)
    # One of the dead server's ports still taken when the watchdog restarts it (as while its
    # threads exit): the restart waits for it rather than moving its workers' address.
    with await held_port(old["metrics_port"]):
        await asyncio.sleep(2.0)
    await wait_until(
        lambda: json.loads((home / "server.json").read_text())["pid"] != old["pid"], 60
    )
    new = json.loads((home / "server.json").read_text())
    assert new["grpc_port"] == old["grpc_port"]
    # Write-ahead logging (client/embedded.py's SQLITE_PRAGMAS): the run survived the kill.
    with contextlib.closing(
        sqlite3.connect(f"file:{home / 'temporal.db'}?mode=ro", uri=True)
    ) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    fake.resume()
    done = await finish(run)
    assert done.code == 0, done.err
    assert "survivor" in done.err
    show = await asyncio.create_subprocess_exec(
        find_temporal_binary(),
        "workflow",
        "show",
        "--workflow-id",
        "survivor",
        "--address",
        f"127.0.0.1:{new['grpc_port']}",
        "--output",
        "json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await show.communicate()
    assert show.returncode == 0, err.decode()
    history = json.loads(out)
    event_types = [event["eventType"] for event in history["events"]]
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED" in event_types
    assert "EVENT_TYPE_ACTIVITY_TASK_COMPLETED" in event_types
    keeper.send_signal(signal.SIGINT)
    assert (await finish(keeper)).code == 0
    assert not (home / "server.json").exists()


async def test_ask_on_the_sim_provider_prints_a_labelled_answer(tmp_path: Path) -> None:
    done = await ponder("ask", "What is durable execution?", env=cli_env(tmp_path))
    assert done.code == 0, done.err
    assert "[sim q=" in done.out
    assert "(simulated)" in done.err


def test_a_path_as_run_id_is_refused_before_a_server_starts(tmp_path: Path) -> None:
    # In this process: ponder_here fails on a command that connects.
    bad = ponder_here("ask", "b", "--run-id", "../etc", env=cli_env(tmp_path))
    assert bad.code == 2 and "run.id_invalid" in bad.err
    assert not (tmp_path / "server.json").exists()


async def test_run_id_in_use_is_refused(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    keeper = await start_ponder("server", env=env)
    await wait_until(lambda: (tmp_path / "server.json").exists())
    assert (await ponder("ask", "a", "--run-id", "same", env=env)).code == 0
    again = await ponder("ask", "b", "--run-id", "same", env=env)
    assert again.code == 2
    assert "run.id_in_use" in again.err
    keeper.send_signal(signal.SIGINT)
    await finish(keeper)


def test_binary_lookup_prefers_the_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fake_bin = tmp_path / "temporal"
    fake_bin.write_text("#!/bin/sh\n")
    fake_bin.chmod(0o755)
    monkeypatch.setenv("PONDER_TEMPORAL_BIN", str(fake_bin))
    assert find_temporal_binary() == str(fake_bin)
    monkeypatch.delenv("PONDER_TEMPORAL_BIN")
    assert Path(find_temporal_binary()).parent == Path(sys.executable).parent
    assert EmbeddedServer(tmp_path).read_state() is None


PORT_TAKEN = "address already in use"


def port_race_binary(tmp_path: Path, lost_races: int, error: str = PORT_TAKEN) -> Path:
    """A ``temporal`` that exits at start like a server that lost a port race ``lost_races``
    times (each start noted in ``starts``), then is the real binary."""
    starts = tmp_path / "starts"
    script = tmp_path / "temporal"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = server ]; then echo start >> {starts}; fi\n'
        f'if [ "$1" = server ] && [ "$(wc -l < {starts})" -le {lost_races} ]; then\n'
        f'  echo \'level=ERROR msg="Failed to start gRPC listener" error="listen tcp '
        f"127.0.0.1:1: bind: {error}\"' >&2\n"
        "  exit 1\n"
        "fi\n"
        f'exec {find_temporal_binary()} "$@"\n'
    )
    script.chmod(0o755)
    return script


async def test_a_server_that_lost_a_port_race_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # start-dev picks its internal ports itself; on a busy machine another process can take
    # one first, and a command (ponder status, say) then failed instead of starting again.
    monkeypatch.setenv("PONDER_TEMPORAL_BIN", str(port_race_binary(tmp_path, lost_races=2)))
    server = EmbeddedServer(tmp_path / "home")
    async with server.lease() as info:
        assert await server_answers(info.address)
    assert (tmp_path / "starts").read_text().count("start") == 3
    assert server_pids(server.db) == []


@pytest.mark.parametrize(("error", "starts"), [(PORT_TAKEN, 3), ("disk I/O error", 1)])
async def test_a_server_that_keeps_failing_at_start_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: str, starts: int
) -> None:
    binary = port_race_binary(tmp_path, lost_races=99, error=error)
    monkeypatch.setenv("PONDER_TEMPORAL_BIN", str(binary))
    with pytest.raises(ServerError, match=f"exited at start: .*{error}"):
        await EmbeddedServer(tmp_path / "home").ensure()
    assert (tmp_path / "starts").read_text().count("start") == starts


async def test_a_lease_ends_when_its_watchdog_drops_the_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.11's ``asyncio.wait_for`` drops a cancel that arrives with its result, and the
    watchdog's restart awaits one (``server_answers``): the lease must still end, not wait on a
    watchdog that goes on watching (seen once: a README test's teardown waited 265 s)."""
    info = ServerInfo(0, 1, 2, 3, 4, str(tmp_path / "temporal.db"), "test")
    restarting = asyncio.Event()
    leases = []

    async def ensure(self: EmbeddedServer, grpc_port: int | None = None) -> ServerInfo:
        leases.append(grpc_port)
        if len(leases) == 2:  # the watchdog's first restart drops the cancel, as wait_for may
            restarting.set()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)
        return info

    # No recorded server: the watchdog restarts it on its first look.
    monkeypatch.setattr(EmbeddedServer, "read_state", lambda self: None)
    monkeypatch.setattr(EmbeddedServer, "ensure", ensure)
    server = EmbeddedServer(tmp_path)

    async def hold() -> None:
        async with server.lease():
            await asyncio.wait_for(restarting.wait(), 30)

    holding = asyncio.ensure_future(hold())
    done, _ = await asyncio.wait({holding}, timeout=10)
    try:
        assert holding in done, "the lease still waits on its watchdog"
    finally:  # a failing lease leaves its watchdog running in the suite's loop: stop it
        for task in asyncio.all_tasks():
            if task.get_coro().__qualname__ == "EmbeddedServer._watch":  # type: ignore[union-attr]
                task.cancel()
        await holding
    assert not list(server.leases.iterdir())
