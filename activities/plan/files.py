"""The activity that writes a plan run's directory: the trace and cost files, then report.html.

The workflow sends the files at every human wait and when the run ends (completed, failed,
cancelled), the trace and the call rows as appends after the first write; this writes them
through the run store (redacted, atomic) and renders report.html from the directory it just
wrote, so the report always matches the trace beside it.
"""

from __future__ import annotations

from temporalio import activity

from activities.heartbeats import in_thread
from activities.plan.report import render_plan_report
from activities.run_store import (
    REFUSED,
    FilesGap,
    RunStore,
    WriteRunFilesInput,
    check_writer,
    refusal,
)

__all__ = ["WRITE_PLAN_FILES", "PlanFileActivities"]

WRITE_PLAN_FILES = "plan_write_run_files"


class PlanFileActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_PLAN_FILES)
    async def write_plan_files(self, input: WriteRunFilesInput) -> list[str]:
        try:
            return await in_thread(self._write, input)
        except (*REFUSED, FilesGap) as exc:
            raise refusal(exc) from None

    def _write(self, input: WriteRunFilesInput) -> list[str]:
        check_writer(input.run_id, self.store, input.chain)
        written = self.store.write_all(input.run_id, input.files, input.appends)
        run_dir = self.store.run_dir(input.run_id)
        report = self.store.write(input.run_id, "report.html", render_plan_report(run_dir))
        return [*written, str(report)]
