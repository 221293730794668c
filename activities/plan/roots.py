"""The workspace roots a worker declares: a plan run's workspace must lie inside one of them.

Whoever can start a workflow names the workspace (``--workspace``, the plan's ``workspace``
field, raw ``temporal workflow start`` input); the worker probes and snapshots files there and
runs command agents in it. So the worker, not the input, says where that may be:
``[plans] workspace_roots`` in ponder.toml, or ``ponder worker --workspace-root DIR``
(repeatable; the flag replaces the file's list). Nothing declared: the directory the worker was
started in, and for an embedded worker (the single-user case: a ``ponder`` command's own worker,
or the home's background worker) also the user's home directory. ``/`` is never a default root:
it would declare everything.

Containment is decided on real paths (symlinks resolved, on both sides), so a workspace that is
a symlink out of a root, or a root reached through one, is judged by where it really is.

A worktree-isolated fan-out runs each item in a worktree under its own run directory
(``<runs_dir>/<run id>/worktrees``): that directory is a root too, for the workflow that owns
the run and no other (``with_run_worktrees``, given the workflow id Temporal names, never
input).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from temporalio import activity

from workflows.plan.reasons import Reason
from workflows.plan.worktrees import WORKTREES_DIR
from workflows.run_ids import RunIdInvalid, check_run_id

__all__ = [
    "WORKSPACE_REFUSED",
    "WORKSPACE_ROOTS_FIX",
    "RunRoots",
    "default_roots",
    "outside_roots",
    "with_run_worktrees",
    "worker_roots",
]

WORKSPACE_REFUSED = str(Reason.ARTIFACT_PATH_ESCAPES_ROOT)
"""The failure type of an activity refusing a workspace: the plan reason."""

WORKSPACE_ROOTS_FIX = (
    "give a workspace inside one of them (ponder plan run --workspace DIR, or the plan's "
    "workspace field), or declare the directory on the worker: [plans] workspace_roots in "
    "ponder.toml, or ponder worker --workspace-root DIR"
)


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def default_roots(*, embedded: bool, cwd: str | None = None) -> list[str]:
    """The roots of a worker that declares none (see the module text)."""
    candidates = [cwd or os.getcwd()]
    if embedded:
        candidates.append(str(Path.home()))
    return [real for real in dict.fromkeys(_real(c) for c in candidates) if real != "/"]


def worker_roots(
    declared: Sequence[str | Path], *, embedded: bool, cwd: str | None = None
) -> list[str]:
    """The real paths of the declared roots, else the defaults."""
    if declared:
        return list(dict.fromkeys(_real(r) for r in declared))
    return default_roots(embedded=embedded, cwd=cwd)


def with_run_worktrees(
    roots: Sequence[str], runs_dir: str | Path, workflow_id: str | None
) -> list[str]:
    """``roots`` plus the real path of the calling workflow's own worktrees directory."""
    try:
        run_id = check_run_id(workflow_id or "")
    except RunIdInvalid:
        return list(roots)
    return [*roots, _real(Path(runs_dir) / run_id / WORKTREES_DIR)]


class RunRoots:
    """The workspace roots a worker declares, for activities that check a path against them;
    with ``runs_dir``, the calling run's own worktrees are a root too (an isolated fan-out item's
    workspace), named by the workflow id Temporal gives the activity."""

    def __init__(self, roots: list[str], runs_dir: str | Path | None = None) -> None:
        self._declared = roots
        self.runs_dir = runs_dir

    @property
    def roots(self) -> list[str]:
        if self.runs_dir is None:
            return list(self._declared)
        return with_run_worktrees(self._declared, self.runs_dir, activity.info().workflow_id)


def outside_roots(workspace: str, roots: Sequence[str], *, field: str = "workspace") -> str | None:
    """Why ``workspace`` may not be used by this worker (None: it lies inside a root).

    The message names the field, the rule and the fix."""
    rule = "a plan run's workspace must be an absolute path inside a root the worker declares"
    if not os.path.isabs(workspace):
        return f"{field} {workspace!r} is not an absolute path: {rule}; fix: give an absolute path"
    real = _real(workspace)
    for root in roots:
        if real == root or Path(real).is_relative_to(root):
            return None
    linked = real != os.path.normpath(workspace)
    where = f"{workspace!r}" + (f" (really {real!r})" if linked else "")
    declared = ", ".join(roots) or "none"
    return (
        f"{field} {where} is outside every workspace root this worker declares ({declared}): "
        f"{rule}; fix: {WORKSPACE_ROOTS_FIX}"
    )
