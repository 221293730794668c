"""``probe_files``: the ensure predicates ``file_exists`` and ``file_contains``, in the workspace.

Jailed as every workspace activity is: the workspace must lie in a root the worker declares
(``activities.plan.roots``), and each path must stay inside it on the real file system
(``workflows.plan.paths.escape_problem``: lexical rules, then every existing component
resolved), else the outcome ``escapes`` (the run fails ``artifact-path-escapes-root``). Then the
file is opened ``O_NOFOLLOW | O_NONBLOCK`` at its resolved path and must ``fstat`` as a regular
file with the inode the path had a moment before: a FIFO cannot hang the worker, a link swapped
in between is not followed, a device is not read. A path that resolves into one of ponder's own
stores (``ponder.toml`` kept in a project directory) ``escapes`` too: the outcome is never read
from it. A missing file (or parent) does not hold; a file over 16 MiB does not hold;
``file_contains`` decodes UTF-8 strictly.
File I/O runs in a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Sequence

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.plan.roots import WORKSPACE_REFUSED, RunRoots, outside_roots, store_problem
from workflows.plan.activity_contracts import PROBE_FILES
from workflows.plan.check_types import (
    MAX_FILE_BYTES,
    FileProbe,
    ProbeFilesInput,
    ProbeFilesResult,
    ProbeOutcome,
)
from workflows.plan.paths import escape_problem

__all__ = ["PROBE_FILES", "FileProbeActivities", "probe"]

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _realpath(path: str) -> str | None:
    try:
        return os.path.realpath(path, strict=False)
    except (OSError, ValueError):
        return None


def probe(workspace: str, item: FileProbe, roots: Sequence[str] = ()) -> ProbeOutcome:
    """One predicate on the file system as it is now (``roots``: the carve-outs to honour)."""
    problem = escape_problem(item.path, workspace, exists=os.path.lexists, realpath=_realpath)
    if problem is not None:
        return ProbeOutcome(holds=False, reason=f"{item.path!r}: {problem}", escapes=True)
    real = _realpath(os.path.join(workspace, item.path))
    if real is None:
        return ProbeOutcome(holds=False, reason=f"{item.path!r} cannot be resolved")
    stored = store_problem(real, roots)
    if stored is not None:
        return ProbeOutcome(holds=False, reason=f"{item.path!r} {stored}", escapes=True)
    try:
        before = os.stat(real)
    except FileNotFoundError:
        return ProbeOutcome(holds=False, reason=f"{item.path} does not exist")
    except NotADirectoryError:
        return ProbeOutcome(holds=False, reason=f"{item.path}: a parent is not a directory")
    except OSError as exc:
        return ProbeOutcome(holds=False, reason=f"{item.path}: {exc.strerror or exc}")
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        why = "it became a symlink" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        return ProbeOutcome(holds=False, reason=f"{item.path} cannot be opened: {why}")
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):
            return ProbeOutcome(holds=False, reason=f"{item.path} is not a regular file")
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            return ProbeOutcome(holds=False, reason=f"{item.path} was replaced while checked")
        if item.text is None:
            return ProbeOutcome(holds=True, reason=f"{item.path} is a regular file")
        if now.st_size > MAX_FILE_BYTES:
            return ProbeOutcome(
                holds=False,
                reason=f"{item.path} is {now.st_size} bytes, over the {MAX_FILE_BYTES >> 20} "
                "MiB that file_contains reads",
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return ProbeOutcome(holds=False, reason=f"{item.path} grew over {MAX_FILE_BYTES >> 20} MiB")
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        return ProbeOutcome(holds=False, reason=f"{item.path} is not UTF-8 text")
    if item.text in content:
        return ProbeOutcome(holds=True, reason=f"{item.path} contains the text")
    return ProbeOutcome(holds=False, reason=f"{item.path} does not contain {item.text[:80]!r}")


class FileProbeActivities(RunRoots):
    @activity.defn(name=PROBE_FILES)
    async def probe_files(self, input: ProbeFilesInput) -> ProbeFilesResult:
        return await asyncio.to_thread(self._probe_files, input)

    def _probe_files(self, input: ProbeFilesInput) -> ProbeFilesResult:
        roots = self.roots
        refused = outside_roots(input.workspace, roots)
        if refused is not None:
            raise ApplicationError(refused, type=WORKSPACE_REFUSED, non_retryable=True)
        return ProbeFilesResult(outcomes=[probe(input.workspace, p, roots) for p in input.probes])
