"""The at-most-once training-pair writer (docs/plans.md, "Training pairs"):
``append_training_pair``.

One file per plan step of one run, ``<training_dir>/<safe(plan)>/<run id>/<safe(step)>.jsonl``,
and beside it a sidecar ``<file>.keys`` with one pair key per line. Every write holds an
exclusive ``flock`` on the step file, so writers (threads, worker processes) take turns, and
each writes its line, then its key, each followed by ``fsync``. Before looking a key up, a
writer **repairs** what a crash can leave:

- a torn last line (a write cut short, no newline) is truncated away, in either file;
- a last record whose key the sidecar lacks (a crash between the line and its key) gets the key:
  writers serialize, so only the last record can lack one.

Then a key already present is ``dup`` (nothing written), else the pair is appended. So a
retried activity and a repeated backfill write a pair at most once, and a crash between line
and key neither loses nor doubles it (the reference's ``mkdir`` mark poisoned the pair on such a
crash).

Whose file: the plan name comes from input, so it cannot say who owns a file. The run id does:
it is the workflow id Temporal gives the activity (never input), claimed for the run's execution
chain in the run store (``RunStore.claim``), so a later execution reusing a closed run's id is
refused ``run.id_in_use`` and writes nothing. A run therefore appends only to its own files,
never to another run's, whatever plan name it gives; and a key is looked up in the run's own
sidecar only, so ``dup`` says nothing about what other runs captured.

Paths: the training directory is the worker's (``training_dir``, a store its owner configures),
never the input's; the names under it are ``safe_name`` forms and the checked run id; each
directory is opened with ``O_NOFOLLOW`` and the next name relative to it, so a symlink planted
inside cannot redirect a write. File I/O runs in a thread, never on the worker's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import stat
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.run_store import REFUSED, RunStore, refusal
from workflows.plan.activity_contracts import APPEND_TRAINING_PAIR, CAPTURE_IO
from workflows.plan.training import (
    MAX_LINE_BYTES,
    PRIVACY_NOTE,
    AppendTrainingPairInput,
    AppendTrainingPairResult,
    is_key,
    safe_name,
)
from workflows.run_ids import check_run_id

__all__ = ["APPEND_TRAINING_PAIR", "CAPTURE_IO", "TrainingActivities", "append_pair"]

_OPEN = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
_WINDOW = MAX_LINE_BYTES + 1
_FIRST_READ = 64 * 1024


class RepairError(OSError):
    """The file's tail is not something this writer leaves (a line past the ceiling)."""


def append_pair(
    root: Path, input: AppendTrainingPairInput, run_id: str
) -> AppendTrainingPairResult:
    """Append ``input.line`` to the run's step file unless its key is there already."""
    if not is_key(input.key):
        raise ValueError("key must be 64 lower-case hex characters (sha256)")
    data = (input.line + "\n").encode("utf-8")
    if "\n" in input.line or len(data) > MAX_LINE_BYTES:
        raise ValueError(f"a record is one line of at most {MAX_LINE_BYTES} bytes")
    plan_dir, run_dir = safe_name(input.plan), check_run_id(run_id)
    name = safe_name(input.step) + ".jsonl"
    root.mkdir(parents=True, exist_ok=True)
    _privacy_note(root)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in (plan_dir, run_dir):
            inner = _subdir(part, dir_fd)
            os.close(dir_fd)
            dir_fd = inner
        fd = _open_regular(name, dir_fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes
            keys_fd = _open_regular(name + ".keys", dir_fd)
            try:
                repaired = _repair(fd, keys_fd)
                if input.key in _keys(keys_fd):
                    return AppendTrainingPairResult(
                        outcome="dup", file=f"{plan_dir}/{run_dir}/{name}", repaired=repaired
                    )
                _write(fd, data)
                _write(keys_fd, (input.key + "\n").encode())
            finally:
                os.close(keys_fd)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)
    return AppendTrainingPairResult(
        outcome="written", file=f"{plan_dir}/{run_dir}/{name}", repaired=repaired
    )


def _subdir(name: str, dir_fd: int) -> int:
    """The directory ``name`` under ``dir_fd``, made if missing, never through a symlink."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _open_regular(name: str, dir_fd: int) -> int:
    fd = os.open(name, _OPEN, 0o600, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{name} is not a regular file")
    return fd


def _privacy_note(root: Path) -> None:
    """``README.md`` once: what the directory holds and that it is not filtered."""
    try:
        fd = os.open(root / "README.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(PRIVACY_NOTE)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _tail(fd: int) -> tuple[int, bytes]:
    """(offset, bytes) of the file's end, reaching back past the newline before its last line
    (or to the start, or ``_WINDOW`` bytes): read small first, most records are."""
    size = os.fstat(fd).st_size
    reach = _FIRST_READ
    while True:
        start = max(0, size - reach)
        data = os.pread(fd, size - start, start)
        if start == 0 or reach >= _WINDOW or data[:-1].rfind(b"\n") >= 0:
            return start, data
        reach = min(reach * 8, _WINDOW)


def _drop_torn(fd: int) -> bool:
    """Truncate an unterminated last line; True if there was one."""
    start, tail = _tail(fd)
    if not tail or tail.endswith(b"\n"):
        return False
    cut = tail.rfind(b"\n")
    if cut < 0 and start > 0:
        raise RepairError("the last line is longer than any record; repair it by hand")
    os.ftruncate(fd, start + cut + 1)
    os.fsync(fd)
    return True


def _last_line(fd: int) -> bytes | None:
    _, tail = _tail(fd)
    if not tail:
        return None
    body = tail[:-1]  # _drop_torn ran: the tail ends with a newline
    return body[body.rfind(b"\n") + 1 :]


def _keys(keys_fd: int) -> set[str]:
    size = os.fstat(keys_fd).st_size
    return set(os.pread(keys_fd, size, 0).decode("ascii", "replace").split())


def _repair(fd: int, keys_fd: int) -> list[str]:
    notes = []
    if _drop_torn(keys_fd):
        notes.append("a torn last key was dropped")
    if _drop_torn(fd):
        notes.append("a torn last line was dropped")
    last = _last_line(fd)
    if last:
        try:
            key = json.loads(last).get("key")
        except (ValueError, AttributeError):
            key = None  # not ours to fix: it is left, and its pair has no key
        if isinstance(key, str) and is_key(key) and key not in _keys(keys_fd):
            _write(keys_fd, (key + "\n").encode())
            notes.append("the last line's missing key was restored")
    return notes


class TrainingActivities:
    """``store``: the run store whose claims say which execution chain owns a run id (None:
    no claim is checked, for a writer without one)."""

    def __init__(self, training_dir: Path, store: RunStore | None = None) -> None:
        self.training_dir = training_dir
        self.store = store

    @activity.defn(name=APPEND_TRAINING_PAIR)
    async def append_training_pair(
        self, input: AppendTrainingPairInput
    ) -> AppendTrainingPairResult:
        run_id = activity.info().workflow_id or ""
        try:
            return await asyncio.to_thread(self._append, input, run_id)
        except REFUSED as exc:
            raise refusal(exc) from None
        except ValueError as exc:
            raise ApplicationError(str(exc), type="capture.invalid", non_retryable=True) from None
        except OSError as exc:
            # A refused directory stays refused: the run goes on, the failure is recorded.
            raise ApplicationError(
                f"{type(exc).__name__}: {exc.strerror or exc}", type=CAPTURE_IO, non_retryable=True
            ) from None

    def _append(self, input: AppendTrainingPairInput, run_id: str) -> AppendTrainingPairResult:
        if self.store is not None and input.chain is not None:
            self.store.claim(check_run_id(run_id), input.chain)
        return append_pair(self.training_dir, input, run_id)
