"""A tournament's artifact writes land in the order the workflow made them, whatever runs late.

An attempt of a write can outlive the workflow's interest in it: a worker that shuts down
reports its running activities failed (``WorkerShutdown``) after its grace period and Temporal
retries them elsewhere, but a write already in its thread cannot be stopped, and the process
waits for that thread before it exits. Such an abandoned attempt then lands whenever its thread
gets to it; seen in CI: a handed-over run's first write (20 calls, ``running``) rewrote
``summary.json`` 2.7 s after the run's final write (the old worker's write had been starved for
9 s while the command exited). A write cancelled with its run (the final write supersedes it)
runs on in the same way.

So every write carries its place in the run's order (``WriteKey``: the workflow time of its
snapshot, then a count the workflow keeps), and the activity writes under an exclusive lock
on ``.write-order`` in the run directory, which records the key of the last write that landed:
a write whose key is older than that one writes nothing. A retry of the same write has the
same key and writes again (the same bytes). The lock is ``flock``: other processes on the
machine (an old worker and the new one) and other threads of this one wait for each other, and
a process that dies holding it releases it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

__all__ = ["ORDER_FILE", "WriteKey", "in_order", "is_older"]

ORDER_FILE = ".write-order"
"""In the run directory: the key of the last artifact write that landed (a dot file, so
listings and exports of the run's files leave it out)."""


class WriteKey(NamedTuple):
    written_at: str
    """The snapshot's ``workflow.now()``: a reset run's writes come after the old run's."""
    seq: int
    """The write's number in its execution (writes of one workflow task share a time)."""


def is_older(key: WriteKey, landed: WriteKey | None) -> bool:
    """Whether a write keyed ``key`` comes before the one that last landed."""
    if landed is None:
        return False
    mine, theirs = datetime.fromisoformat(key.written_at), datetime.fromisoformat(landed.written_at)
    return (mine, key.seq) < (theirs, landed.seq)


def _read(fd: int) -> WriteKey | None:
    raw = os.pread(fd, 4096, 0)
    try:
        written_at, seq = json.loads(raw)
        key = WriteKey(str(written_at), int(seq))
        datetime.fromisoformat(key.written_at)
    except (ValueError, TypeError):  # empty (a new file) or torn by a crash: no order yet
        return None
    return key


@contextlib.contextmanager
def in_order(run_dir: Path, key: WriteKey | None) -> Iterator[bool]:
    """Hold the run directory's write lock; yield whether a write keyed ``key`` may go ahead
    (False: a later write has landed, write nothing), and record ``key`` as the last landed
    when the block ends without an error. ``key`` None (a write an older workflow scheduled)
    goes ahead unordered, as before, and records nothing. ``run_dir`` must exist (checked)."""
    if key is None:
        yield True
        return
    fd = os.open(run_dir / ORDER_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released with the descriptor
        if is_older(key, _read(fd)):
            yield False
            return
        yield True
        data = json.dumps(list(key)).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)
