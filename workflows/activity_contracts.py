"""What workflows and ponder's shared activities agree on: registered names, input models, the
error codes a workflow branches on, and the heartbeat timeout it schedules them with.

Workflows import this module, never an activity module: those load httpx, the file system
helpers and the providers, which a workflow (and each process that merely imports one, such as
``ponder ask``) has no use for. The activities register under these names and take these models,
so each lives here once. Names, codes and field names are in saved histories: never rename one,
and add fields only with defaults. Each area's own activities have theirs beside it
(``workflows/<area>/activity_contracts.py``); provider errors are ``workflows.provider_errors``.

Pure: pydantic and the standard library only.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel

__all__ = [
    "CALL_MODEL",
    "FILES_GAP",
    "HEARTBEAT_TIMEOUT",
    "QUEUE_POLLED",
    "RUN_DIR_INVALID",
    "RUN_ID_IN_USE",
    "WRITE_RUN_FILES",
    "FileAppend",
    "WriteRunFilesInput",
]

CALL_MODEL = "call_model"
"""One model call (``activities.call_model``): ``CallModelInput`` in, ``ModelResponse`` out."""
QUEUE_POLLED = "task_queue_polled"
"""Whether a worker polls a task queue now (``activities.routes``): a queue name in, a bool out."""
WRITE_RUN_FILES = "write_run_files"
"""A run's files through the run store (``activities.run_files``): ``WriteRunFilesInput`` in."""

RUN_DIR_INVALID = "run.dir_invalid"
"""The run store refused a run directory or a path in it (it would lead outside the store)."""
RUN_ID_IN_USE = "run.id_in_use"
"""An earlier execution under the same workflow id already wrote a run there."""
FILES_GAP = "run.files_gap"
"""An append whose file holds fewer lines than the writer sent before: send the file whole."""

HEARTBEAT_TIMEOUT = timedelta(seconds=20)
"""The heartbeat timeout of ponder's own long activities (a cell's settle step, artifact and
run-file writes): a worker killed during one is noticed, and the activity retried on another,
within this (plus the retry interval)."""


class FileAppend(BaseModel):
    after_lines: int
    """Lines the file holds before ``text``: what the writer sent it before."""
    text: str
    """The new lines, each ending in a newline."""


class WriteRunFilesInput(BaseModel):
    run_id: str
    files: dict[str, str]
    """Relative path -> full content. Re-executing writes the same bytes."""
    appends: dict[str, FileAppend] = {}
    """Relative path -> new lines after the first ``after_lines`` (re-executing writes the
    same bytes too: the file is cut back to ``after_lines`` first)."""
    chain: str | None = None
    """The writing workflow's ``first_execution_run_id`` (see ``activities/run_store.py``)."""
