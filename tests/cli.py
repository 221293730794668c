"""Run the real ``ponder`` command as a subprocess (asyncio, so in-process workers keep going)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from client.embedded import EmbeddedServer


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


@contextlib.asynccontextmanager
async def one_server(home: Path) -> AsyncIterator[None]:
    """Hold a lease on ``home``'s embedded server for the block: the commands a test runs in
    turn share one server instead of each starting and stopping its own (seconds apiece)."""
    async with EmbeddedServer(home).lease():
        yield
