"""Run the real ``ponder`` command as a subprocess (asyncio, so in-process workers keep going)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from client.embedded import EmbeddedServer, ServerInfo


@dataclass
class Done:
    code: int
    out: str
    err: str


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "PONDER_"))}
    # The server stops with its last command, as each test expects (unless it sets a period).
    env.update({"PONDER_HOME": str(home), "PONDER_SERVER_IDLE_S": "0", **extra})
    return env


async def start_ponder(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "client",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process, timeout: float = 120) -> Done:
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return Done(process.returncode, out.decode(), err.decode())


async def ponder(*args: str, env: dict[str, str], timeout: float = 120) -> Done:
    return await finish(await start_ponder(*args, env=env), timeout)


def ponder_here(*args: str, env: dict[str, str]) -> Done:
    """``ponder ARGS`` run in this process, for commands that never connect (a dry run, a refusal
    before any server): a ``ponder`` process costs ~0.8 s of CPU, most of it imports.

    The same path as the process from ``main`` on (``client.cli.exit_code``: click, the one-line
    coded errors, the exit code), with ``env`` as the whole environment, ``sys.argv`` as the
    process would see it and stdout/stderr captured (click's ``CliRunner`` isolation). What a
    command sets up for its process is undone after it (root log handlers, the Temporal runtime
    it would install on connecting); one that connected fails here, since its runtime would stay
    in this process: run it with ``ponder`` instead. Sync tests only (a command runs its own
    event loop). ``ponder`` as a real process is still run by the tests beside these."""
    from click.testing import CliRunner

    from client.cli import cli, exit_code
    from worker import logs

    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        raise AssertionError("ponder_here blocks the event loop: call it from a sync test")
    root = logging.getLogger()
    handlers, level, wanted = list(root.handlers), root.level, logs._runtime_wanted
    installed, argv = logs._runtime_installed, sys.argv
    overrides: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    sys.argv = [str(Path(sys.executable).parent / "ponder"), *args]
    try:
        with CliRunner().isolation(env={**overrides, **env}) as (out, err, _):
            code = exit_code(cli, args=list(args), prog_name="ponder")
            sys.stdout.flush()
            sys.stderr.flush()
            done = Done(code, out.getvalue().decode(), err.getvalue().decode())
    finally:
        sys.argv = argv
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        logs._runtime_wanted = wanted
    assert logs._runtime_installed == installed, f"ponder {' '.join(args)} connected a client"
    return done


@contextlib.asynccontextmanager
async def one_server(home: Path) -> AsyncIterator[ServerInfo]:
    """Hold a lease on ``home``'s embedded server for the block: the commands a test runs in
    turn share one server instead of each starting and stopping its own (seconds apiece)."""
    async with EmbeddedServer(home).lease() as info:
        yield info
