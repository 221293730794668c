"""The record of a home's background worker (``$PONDER_HOME/workers/QUEUE.json``): which process
serves the queue, and with which configuration. Read here; written under its lock by
``client.session``, which spawns and retires the worker.

No SDK import: ``ponder status`` checks for the worker before it reads a live run over the
server's HTTP API (``client.status_http``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from client.embedded import live_argv

if TYPE_CHECKING:
    from activities.config import Settings

__all__ = [
    "is_background_worker",
    "read_record",
    "record_path",
    "record_pid",
    "running_background_worker",
]


def record_path(settings: Settings) -> Path:
    return settings.home / "workers" / f"{settings.task_queue}.json"


def is_background_worker(pid: int, settings: Settings) -> bool:
    argv = live_argv(pid)
    return (
        argv is not None
        and b"--embedded" in argv
        and b"--exit-when-idle" in argv
        and settings.task_queue.encode() in argv
    )


def read_record(record: Path) -> dict[str, object]:
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_pid(record: Path, settings: Settings) -> int | None:
    try:
        pid = int(read_record(record)["pid"])  # type: ignore[call-overload]
    except (KeyError, TypeError, ValueError):
        return None
    return pid if is_background_worker(pid, settings) else None


def running_background_worker(settings: Settings) -> int | None:
    """The pid of this home's live background worker for the task queue, if any."""
    return record_pid(record_path(settings), settings)
