"""A worker in its own process (``python -m worker``), for tests that kill it or read its logs."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from activities.config import Settings

__all__ = ["start_worker"]


async def start_worker(
    settings: Settings, address: str, queue: str, *, output: Path | None = None
) -> asyncio.subprocess.Process:
    """A worker with ``settings``' directories and ``$PONDER_HOME/ponder.toml``; its stdout and
    stderr go to ``output`` when given (appended: a restarted worker keeps the earlier log)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env |= {
        "TEMPORAL_ADDRESS": address,
        "PONDER_HOME": str(settings.home),
        "PONDER_RUNS_DIR": str(settings.runs_dir),
        "PONDER_PAYLOAD_DIR": str(settings.payload_dir),
        "PONDER_CONFIG": str(settings.home / "ponder.toml"),
    }
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
            env=env,
            stdout=sink or asyncio.subprocess.DEVNULL,
            stderr=sink or asyncio.subprocess.DEVNULL,
        )
    finally:
        if sink:
            sink.close()
