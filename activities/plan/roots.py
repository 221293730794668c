"""The workspace roots a worker declares: a plan run's workspace must lie inside one of them.

Whoever can start a workflow names the workspace (``--workspace``, the plan's ``workspace``
field, raw ``temporal workflow start`` input); the worker probes and snapshots files there and
runs command agents in it. So the worker, not the input, says where that may be:
``[plans] workspace_roots`` in ponder.toml, or ``ponder worker --workspace-root DIR``
(repeatable; the flag replaces the file's list). Nothing declared: the directory the worker was
started in, which for a ``ponder`` command's own worker (and the background worker it leaves)
is the directory the command ran from. ``/`` is never a default root: it would declare
everything, and the user's home directory itself is never one either: it holds ponder's own
stores, keys and secrets (declare it to mean it; the stores stay carved out even then).

Embedded workers of one home and one configuration share a task queue, that configuration's
own (``ponder.<digest>``, ``client.worker_fingerprint``): a command's own worker, and the
background worker an earlier command with that configuration left. Any of them may serve any
of their runs, and no worker of another configuration takes them. Each notes the directory it
started in, in ``$PONDER_HOME/workers/QUEUE.dirs`` (one file per queue, the last
``COMMAND_DIRS_KEPT``), and each holds a workspace to all of those, read at every check: a run
started from one project directory is still served when a command from another one, with the
same configuration, started the worker that takes its task. A directory with a ponder.toml of
its own is another configuration, another queue and another file. Only ponder's own commands
write that file, inside the home no run may reach.

Ponder's own stores (its home with the state, logs and configuration there, the runs, payload
and training directories, replay directories, the configuration and secrets files) are carved
out of every root, whatever the roots say: a workspace that lies in a store, or holds one, is
refused, and so is a workspace path that resolves into one (``ponder.toml`` kept in a project
directory). A root that contains the home stays a root for everything else under it. Otherwise
a run could read another run's outputs or the user's keys one ``file_contains`` bit at a time.

Containment is decided on real paths (symlinks resolved, on both sides), so a workspace that is
a symlink out of a root, or into a store, is judged by where it really is.

A worktree-isolated fan-out runs each item in a worktree under its own run directory
(``<runs_dir>/<run id>/worktrees``): that directory is a root too, for the workflow that owns
the run and no other (``with_run_worktrees``, given the workflow id Temporal names, never
input), and the one place inside a store a workspace may be.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from temporalio import activity

from activities.atomic import write_atomically
from activities.config import Settings
from workflows.plan.reasons import Reason
from workflows.plan.worktrees import WORKTREES_DIR
from workflows.run_ids import RunIdInvalid, check_run_id

__all__ = [
    "COMMAND_DIRS_KEPT",
    "WORKSPACE_REFUSED",
    "WORKSPACE_ROOTS_FIX",
    "RunRoots",
    "WorkspaceRoots",
    "command_dirs_file",
    "default_roots",
    "outside_roots",
    "ponder_stores",
    "store_problem",
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
COMMAND_DIRS_KEPT = 32
"""Start directories of embedded workers a home remembers (the oldest is dropped first)."""
_COMMAND_DIRS_BYTES = 256 * 1024
_STORE_RULE = (
    "ponder's own stores (runs, payloads, training pairs, logs, configuration, state) are "
    "never part of a workspace, whatever roots the worker declares"
)


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def _within(path: str, root: str) -> bool:
    return path == root or Path(path).is_relative_to(root)


class WorkspaceRoots(list[str]):
    """The real paths of a worker's roots, carrying the carve-outs every check must apply.

    A list, so each activity that is handed the roots (and ``with_run_worktrees``, which adds
    to them) applies the carve-outs without being told: ``stores`` (directories no workspace
    may overlap), ``store_files`` (files no workspace path may reach) and ``granted`` (the
    calling run's own worktrees, allowed inside the runs store); ``command_dirs``, the file of
    the home's embedded workers' start directories, roots too (see the module text)."""

    def __init__(
        self,
        roots: Iterable[str] = (),
        *,
        stores: Iterable[str] = (),
        store_files: Iterable[str] = (),
        granted: Iterable[str] = (),
        command_dirs: Path | None = None,
    ) -> None:
        super().__init__(roots)
        self.stores = tuple(stores)
        self.store_files = tuple(store_files)
        self.granted = tuple(granted)
        self.command_dirs = command_dirs

    def derived(self, roots: Iterable[str], *, granted: Iterable[str] = ()) -> WorkspaceRoots:
        return WorkspaceRoots(
            roots,
            stores=self.stores,
            store_files=self.store_files,
            granted=(*self.granted, *granted),
            command_dirs=self.command_dirs,
        )

    def current(self) -> list[str]:
        """The roots as they stand now: these, and every start directory the home noted."""
        noted = _read_dirs(self.command_dirs) if self.command_dirs is not None else []
        return list(dict.fromkeys([*self, *(_real(d) for d in noted)]))


def command_dirs_file(settings: Settings) -> Path:
    return settings.home / "workers" / f"{settings.task_queue}.dirs"


def _read_dirs(path: Path) -> list[str]:
    try:
        with path.open("rb") as f:
            text = f.read(_COMMAND_DIRS_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return []
    return [d for d in text.splitlines() if os.path.isabs(d) and _may_default(_real(d))]


def _note_dir(path: Path, directory: str) -> None:
    """Add ``directory`` to the home's start directories (under a lock, replaced whole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".dirs.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = [d for d in _read_dirs(path) if d != directory][-(COMMAND_DIRS_KEPT - 1) :]
        write_atomically(path, "".join(f"{d}\n" for d in [*kept, directory]).encode())


def _carve_outs(roots: Sequence[str]) -> WorkspaceRoots:
    return roots if isinstance(roots, WorkspaceRoots) else WorkspaceRoots(roots)


def ponder_stores(settings: Settings) -> tuple[list[str], list[str]]:
    """The real paths of ponder's own store directories and files on this worker."""
    dirs = [settings.home, settings.runs_dir, settings.payload_dir, settings.training_dir]
    dirs += settings.replay_dirs
    files = [settings.config_file] if settings.config_file is not None else []
    if secrets := os.environ.get("PONDER_SECRETS_FILE"):
        files.append(Path(secrets))
    return list(dict.fromkeys(_real(d) for d in dirs)), [_real(f) for f in files]


def _may_default(real: str) -> bool:
    """``/`` and the user's home are never roots unless declared: they hold everything."""
    return real not in ("/", _real(Path.home()))


def default_roots(*, cwd: str | None = None) -> list[str]:
    """The roots of a worker that declares none (see the module text)."""
    real = _real(cwd or os.getcwd())
    return [real] if _may_default(real) else []


def worker_roots(
    declared: Sequence[str | Path],
    *,
    settings: Settings | None = None,
    embedded: bool = False,
    cwd: str | None = None,
) -> WorkspaceRoots:
    """The real paths of the declared roots, else the defaults (for an ``embedded`` worker, also
    noting its start directory for the home's other embedded workers), with ``settings``'
    stores carved out of them."""
    roots = [*dict.fromkeys(_real(r) for r in declared)] if declared else default_roots(cwd=cwd)
    if settings is None:
        return WorkspaceRoots(roots)
    stores, files = ponder_stores(settings)
    noted = None
    if embedded and not declared:
        noted = command_dirs_file(settings)
        for root in roots:
            try:
                _note_dir(noted, root)
            except OSError as exc:  # the worker still serves its own start directory
                logging.getLogger(__name__).warning("cannot note %s in %s: %s", root, noted, exc)
    return WorkspaceRoots(roots, stores=stores, store_files=files, command_dirs=noted)


def with_run_worktrees(
    roots: Sequence[str], runs_dir: str | Path, workflow_id: str | None
) -> WorkspaceRoots:
    """``roots`` plus the real path of the calling workflow's own worktrees directory."""
    held = _carve_outs(roots)
    try:
        run_id = check_run_id(workflow_id or "")
    except RunIdInvalid:
        return held.derived(held)
    own = _real(Path(runs_dir) / run_id / WORKTREES_DIR)
    return held.derived([*held, own], granted=[own])


class RunRoots:
    """The workspace roots a worker declares, for activities that check a path against them;
    with ``runs_dir``, the calling run's own worktrees are a root too (an isolated fan-out item's
    workspace), named by the workflow id Temporal gives the activity."""

    def __init__(self, roots: Sequence[str], runs_dir: str | Path | None = None) -> None:
        self._declared = _carve_outs(roots)
        self.runs_dir = runs_dir

    @property
    def roots(self) -> WorkspaceRoots:
        if self.runs_dir is None:
            return self._declared.derived(self._declared)
        return with_run_worktrees(self._declared, self.runs_dir, activity.info().workflow_id)


def store_problem(real: str, roots: Sequence[str]) -> str | None:
    """Why the real path ``real`` (a workspace, or a file in one) is ponder's own (None: not)."""
    held = _carve_outs(roots)
    if any(_within(real, own) for own in held.granted):
        return None
    for store in held.stores:
        if _within(real, store) or Path(store).is_relative_to(real):
            return f"overlaps ponder's store {store!r}"
    for file in held.store_files:
        if real == file:
            return f"is ponder's configuration or secrets file {file!r}"
    return None


def outside_roots(workspace: str, roots: Sequence[str], *, field: str = "workspace") -> str | None:
    """Why ``workspace`` may not be used by this worker (None: it lies inside a root).

    The message names the field, the rule and the fix."""
    rule = "a plan run's workspace must be an absolute path inside a root the worker declares"
    if not os.path.isabs(workspace):
        return f"{field} {workspace!r} is not an absolute path: {rule}; fix: give an absolute path"
    real = _real(workspace)
    linked = real != os.path.normpath(workspace)
    where = f"{workspace!r}" + (f" (really {real!r})" if linked else "")
    now = _carve_outs(roots).current()
    if not any(_within(real, root) for root in now):
        declared = ", ".join(now) or "none"
        return (
            f"{field} {where} is outside every workspace root this worker declares ({declared}): "
            f"{rule}; fix: {WORKSPACE_ROOTS_FIX}"
        )
    stored = store_problem(real, roots)
    if stored is not None:
        return (
            f"{field} {where} {stored}: {_STORE_RULE}; fix: give a workspace that neither lies "
            "in nor holds ponder's home or stores"
        )
    return None
