"""A worker in its own process (``python -m worker``), for tests that kill it or read its logs."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from activities.config import Endpoint, Settings

__all__ = ["KilledWorker", "declare_fake", "start_worker"]


def declare_fake(settings: Settings, url: str, name: str = "local") -> Settings:
    """The fake provider at ``url`` as provider ``name`` (openai kind, ponder headers on) for
    both kinds of worker: in ``$PONDER_HOME/ponder.toml`` for a worker process, and in the
    settings returned for an in-process one."""
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.{name}]\nkind = "openai"\nbase_url = "{url}"\nponder_headers = true\n'
    )
    endpoint = Endpoint(kind="openai", base_url=url, ponder_headers=True)
    return settings.model_copy(update={"providers": {**settings.providers, name: endpoint}})


class KilledWorker:
    """A worker process to SIGKILL mid-run (``kill``, then ``restart``, as often as needed);
    leaving the block stops whichever worker is left (SIGTERM)."""

    def __init__(self, settings: Settings, address: str, queue: str) -> None:
        self.settings, self.address, self.queue = settings, address, queue
        self.process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> KilledWorker:
        self.process = await start_worker(self.settings, self.address, self.queue)
        return self

    async def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def restart(self) -> None:
        self.process = await start_worker(self.settings, self.address, self.queue)

    async def kill_and_restart(self) -> None:
        await self.kill()
        await self.restart()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            await self.process.wait()


def worker_env(settings: Settings, address: str) -> dict[str, str]:
    """A worker process's environment: this process's, without its ponder and Temporal
    settings, pointed at ``address`` and ``settings``' directories."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    return env | {
        "TEMPORAL_ADDRESS": address,
        "PONDER_HOME": str(settings.home),
        "PONDER_RUNS_DIR": str(settings.runs_dir),
        "PONDER_PAYLOAD_DIR": str(settings.payload_dir),
        "PONDER_CONFIG": str(settings.home / "ponder.toml"),
    }


async def start_worker(
    settings: Settings,
    address: str,
    queue: str,
    *,
    output: Path | None = None,
    max_file_bytes: int | None = None,
    args: Sequence[str] = (),
) -> asyncio.subprocess.Process:
    """A worker with ``settings``' directories and ``$PONDER_HOME/ponder.toml``; its stdout and
    stderr go to ``output`` when given (appended: a restarted worker keeps the earlier log).
    ``max_file_bytes``: the worker's file-size limit (``ulimit -f``), a write past it failing
    part-way as on a full disk. ``args``: more ``python -m worker`` options."""

    def limit() -> None:
        if max_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    sink = output.open("ab") if output else None
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "worker",
            "--task-queue",
            queue,
            "--sticky-timeout",
            "1",
            *args,
            env=worker_env(settings, address),
            stdout=sink or asyncio.subprocess.DEVNULL,
            stderr=sink or asyncio.subprocess.DEVNULL,
            preexec_fn=limit if max_file_bytes is not None else None,
        )
    finally:
        if sink:
            sink.close()
