"""The ``write_run_files`` activity: a workflow's files, written into its run directory by the
run store (``activities/run_store.py``, which imports no Temporal SDK); and ``in_run_store``,
how every activity that writes or reads a run directory calls the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeats import in_thread
from activities.run_file_crypto import RunFileUnreadable
from activities.run_store import (
    REFUSED,
    WRITE_RUN_FILES,
    FilesGap,
    RunStore,
    WriteRunFilesInput,
    check_writer,
    refusal,
)

__all__ = ["RunFileActivities", "in_run_store"]

_In = TypeVar("_In")
_Out = TypeVar("_Out")


async def in_run_store(operation: Callable[[_In], _Out], argument: _In) -> _Out:
    """A run-store operation for an activity: on a thread while the activity heartbeats, and a
    refusal (another run's directory, a path outside the run, a gap in an append, a sealed file
    this worker's keyring cannot open) raised as its coded error, which is never retried."""
    try:
        return await in_thread(operation, argument)
    except (*REFUSED, FilesGap) as exc:
        raise refusal(exc) from None
    except RunFileUnreadable as exc:
        raise ApplicationError(exc.message, type=exc.code, non_retryable=True) from None


class RunFileActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_RUN_FILES)
    async def write_run_files(self, input: WriteRunFilesInput) -> list[str]:
        return await in_run_store(self._write, input)

    def _write(self, input: WriteRunFilesInput) -> list[str]:
        check_writer(input.run_id, self.store, input.chain)
        return self.store.write_all(input.run_id, input.files, input.appends)
