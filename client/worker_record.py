"""The record of a home's background worker for one task queue
(``$PONDER_HOME/workers/QUEUE.json``): which process serves the queue, and with which
configuration. On the embedded server each configuration has its own queue
(``client.worker_fingerprint``), so a home has a record, and at most one live background
worker, per configuration. Read here; written under its lock by ``client.session``, which
spawns the worker.

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
    "queue_worker",
    "read_record",
    "record_path",
    "record_pid",
    "running_background_worker",
]


def _queue_record(home: Path, task_queue: str) -> Path:
    return home / "workers" / f"{task_queue}.json"


def record_path(settings: Settings) -> Path:
    """The record of ``settings``' own task queue (give them on their configuration's queue)."""
    return _queue_record(settings.home, settings.task_queue)


def _serves_queue(pid: int, task_queue: str) -> bool:
    argv = live_argv(pid)
    return (
        argv is not None
        and b"--embedded" in argv
        and b"--exit-when-idle" in argv
        and task_queue.encode() in argv
    )


def is_background_worker(pid: int, settings: Settings) -> bool:
    return _serves_queue(pid, settings.task_queue)


def read_record(record: Path) -> dict[str, object]:
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _live_pid(record: Path, task_queue: str) -> int | None:
    try:
        pid = int(read_record(record)["pid"])  # type: ignore[call-overload]
    except (KeyError, TypeError, ValueError):
        return None
    return pid if _serves_queue(pid, task_queue) else None


def record_pid(record: Path, settings: Settings) -> int | None:
    return _live_pid(record, settings.task_queue)


def running_background_worker(settings: Settings) -> int | None:
    """The pid of this home's live background worker for ``settings``' task queue, if any."""
    return record_pid(record_path(settings), settings)


def queue_worker(home: Path, task_queue: str) -> int | None:
    """The pid of ``home``'s live background worker polling ``task_queue`` (a run's, whatever
    configuration started it), if any."""
    if "/" in task_queue or task_queue.startswith("."):  # a queue name, never a path
        return None
    return _live_pid(_queue_record(home, task_queue), task_queue)
