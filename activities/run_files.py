"""The ``write_run_files`` activity: a workflow's files, written into its run directory by the
run store (``activities/run_store.py``, which imports no Temporal SDK)."""

from __future__ import annotations

from temporalio import activity

from activities.heartbeats import in_thread
from activities.run_store import (
    REFUSED,
    WRITE_RUN_FILES,
    FilesGap,
    RunStore,
    WriteRunFilesInput,
    check_writer,
    refusal,
)

__all__ = ["RunFileActivities"]


class RunFileActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_RUN_FILES)
    async def write_run_files(self, input: WriteRunFilesInput) -> list[str]:
        try:
            return await in_thread(self._write, input)
        except (*REFUSED, FilesGap) as exc:
            raise refusal(exc) from None

    def _write(self, input: WriteRunFilesInput) -> list[str]:
        check_writer(input.run_id, self.store, input.chain)
        return self.store.write_all(input.run_id, input.files, input.appends)
