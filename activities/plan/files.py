"""The activity that writes a plan run's directory: the trace and cost files, then report.html.

The workflow sends the files at every human wait and when the run ends (completed, failed,
cancelled), the trace and the call rows as appends after the first write; this writes them
through the run store (redacted, atomic) and renders report.html from the directory it just
wrote, so the report always matches the trace beside it.

``plan_read_checkpoint`` reads one label of another run's ``checkpoints.json`` for
``plan run --from RUN:LABEL``: only that file of a run directory in the store (the run id is
validated, the directory and the file must not be symlinks), at most 1 MiB, as JSON, and only
with that run's read token (``run.capability_required`` / ``run.capability_invalid`` otherwise,
before anything of it is read: a wrong label lists the labels only to a holder of the token).
"""

from __future__ import annotations

import errno
import os
import stat

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.plan.report import render_plan_report
from activities.run_file_crypto import open_run_bytes
from activities.run_files import in_run_store
from activities.run_store import (
    RunStore,
    WriteRunFilesInput,
    check_read_token,
    check_writer,
)
from workflows.inputs import INPUT_INVALID
from workflows.plan.activity_contracts import READ_CHECKPOINT, WRITE_PLAN_FILES, ReadCheckpointInput
from workflows.plan.checkpoints import (
    CHECKPOINTS_FILE,
    MAX_CHECKPOINTS_FILE_BYTES,
    RestorePoint,
    restore_point,
)

__all__ = ["READ_CHECKPOINT", "WRITE_PLAN_FILES", "PlanFileActivities", "ReadCheckpointInput"]


class PlanFileActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_PLAN_FILES)
    async def write_plan_files(self, input: WriteRunFilesInput) -> list[str]:
        return await in_run_store(self._write, input)

    def _write(self, input: WriteRunFilesInput) -> list[str]:
        check_writer(input.run_id, self.store, input.chain)
        written = self.store.write_all(input.run_id, input.files, input.appends)
        run_dir = self.store.run_dir(input.run_id)
        report = self.store.write(input.run_id, "report.html", render_plan_report(run_dir))
        return [*written, str(report)]

    @activity.defn(name=READ_CHECKPOINT)
    async def read_checkpoint(self, input: ReadCheckpointInput) -> RestorePoint:
        return await in_run_store(self._read_checkpoint, input)

    def _read_checkpoint(self, input: ReadCheckpointInput) -> RestorePoint:
        # The capability first: without it, not even whether the run or the label exists.
        check_read_token(self.store.root, input.run_id, input.token)
        run_dir = self.store.writable_dir(input.run_id)  # refuses a symlinked run directory
        path = run_dir / CHECKPOINTS_FILE
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            why = "has no checkpoints (no checkpoints.json)" if missing else str(exc.strerror)
            raise _refused(
                f"checkpoint-not-found: run {input.run_id} {why}; fix: name a run that "
                "committed a checkpoint"
            ) from None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CHECKPOINTS_FILE_BYTES:
                raise _refused(
                    f"{INPUT_INVALID}: run {input.run_id}'s {CHECKPOINTS_FILE} is not a regular "
                    f"file of at most {MAX_CHECKPOINTS_FILE_BYTES} bytes"
                )
            data = open_run_bytes(f.read(MAX_CHECKPOINTS_FILE_BYTES + 1), path)
        text = data.decode("utf-8", errors="replace")
        point, problem = restore_point(text, run_id=input.run_id, label=input.label)
        if point is None:
            raise _refused(problem)
        return point


def _refused(message: str) -> ApplicationError:
    return ApplicationError(message, type=INPUT_INVALID, non_retryable=True)
