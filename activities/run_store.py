"""The run store: ``<runs_dir>/<run-id>/``, written whole-file and atomically by activities."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import BaseModel
from temporalio import activity

from workflows.names import RUN_ID

__all__ = ["WRITE_RUN_FILES", "RunFileActivities", "RunStore", "WriteRunFilesInput"]

WRITE_RUN_FILES = "write_run_files"


class WriteRunFilesInput(BaseModel):
    run_id: str
    files: dict[str, str]
    """Relative path -> full content. Re-executing writes the same bytes."""


class RunStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def run_dir(self, run_id: str) -> Path:
        if not RUN_ID.match(run_id):
            raise ValueError(f"run id {run_id!r} is not [A-Za-z0-9][A-Za-z0-9._-]* (<= 128)")
        return self.root / run_id

    def path(self, run_id: str, relative: str) -> Path:
        target = (self.run_dir(run_id) / relative).resolve()
        if not target.is_relative_to(self.run_dir(run_id).resolve()):
            raise ValueError(f"{relative!r} leaves the run directory")
        return target

    def write(self, run_id: str, relative: str, content: str | bytes) -> Path:
        """Replace ``relative`` whole: readers see the old file or the new one, never half."""
        target = self.path(run_id, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target


class RunFileActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_RUN_FILES)
    async def write_run_files(self, input: WriteRunFilesInput) -> list[str]:
        return [str(self.store.write(input.run_id, rel, text)) for rel, text in input.files.items()]
