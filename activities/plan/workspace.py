"""Workspace activities of a plan run: containment probes, write snapshots, the landed barrier.

File I/O runs in a thread (``asyncio.to_thread``), never on the worker's event loop.
The containment rule is the pure one in ``workflows.plan.paths``, given the real file system:
it runs at preflight and again before every dispatch, so a symlink planted after preflight is
caught. A snapshot is its own activity, taken before the executor runs, so a retried executor
cannot snapshot its own first attempt's write.

Every activity first holds the workspace to the roots this worker declares (``roots``): the
input names the workspace, the worker decides where one may be (``activities.plan.roots``),
and a declared path that resolves into one of ponder's own stores is refused like an escape.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.plan.roots import WORKSPACE_REFUSED, RunRoots, outside_roots, store_problem
from workflows.plan.activity_contracts import CHECK_LANDED, CHECK_PATHS, SNAPSHOT_WRITES
from workflows.plan.paths import escape_problem
from workflows.plan.run_types import LandedInput, PathsInput, WriteSnapshot

__all__ = [
    "CHECK_LANDED",
    "CHECK_PATHS",
    "SNAPSHOT_WRITES",
    "WorkspaceActivities",
]


def _realpath(path: str) -> str | None:
    try:
        return os.path.realpath(path, strict=False)
    except (OSError, ValueError):
        return None


def _digest(path: Path) -> str | None:
    if not path.is_file():
        return None
    sha = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            sha.update(block)
    return sha.hexdigest()


class WorkspaceActivities(RunRoots):
    def _confined(self, workspace: str) -> None:
        """Snapshots and the landed barrier run after the preflight probe; a workspace that
        left the roots since (or input that skipped the probe) is refused, never read."""
        problem = outside_roots(workspace, self.roots)
        if problem is not None:
            raise ApplicationError(problem, type=WORKSPACE_REFUSED, non_retryable=True)

    @activity.defn(name=CHECK_PATHS)
    async def check_paths(self, input: PathsInput) -> list[str]:
        return await asyncio.to_thread(self._check_paths, input)

    @activity.defn(name=SNAPSHOT_WRITES)
    async def snapshot_writes(self, input: PathsInput) -> WriteSnapshot:
        return await asyncio.to_thread(self._snapshot_writes, input)

    @activity.defn(name=CHECK_LANDED)
    async def check_landed(self, input: LandedInput) -> list[str]:
        return await asyncio.to_thread(self._check_landed, input)

    def _check_paths(self, input: PathsInput) -> list[str]:
        """One line per refused path (``path: why``); a workspace outside the worker's roots,
        or missing, is refused alone (nothing outside the roots is probed)."""
        roots = self.roots
        outside = outside_roots(input.workspace, roots, field=input.field)
        if outside is not None:
            return [outside]
        if not os.path.isdir(input.workspace):
            return [f"workspace {input.workspace!r} is not a directory on the worker"]
        problems = []
        for rel in input.paths:
            problem = escape_problem(
                rel, input.workspace, exists=os.path.lexists, realpath=_realpath
            )
            if problem is None:
                real = _realpath(os.path.join(input.workspace, rel))
                problem = store_problem(real, roots) if real is not None else None
            if problem is not None:
                problems.append(f"{rel!r}: {problem}")
        return problems

    def _snapshot_writes(self, input: PathsInput) -> WriteSnapshot:
        self._confined(input.workspace)
        root = Path(input.workspace)
        return WriteSnapshot(hashes={rel: _digest(root / rel) for rel in input.paths})

    def _check_landed(self, input: LandedInput) -> list[str]:
        """Every declared write exists and differs from its snapshot, else why not."""
        self._confined(input.workspace)
        root = Path(input.workspace)
        problems = []
        for rel, before in input.before.hashes.items():
            after = _digest(root / rel)
            if after is None:
                problems.append(f"{rel} was not written")
            elif after == before:
                problems.append(f"{rel} is unchanged from before the step")
        return problems
