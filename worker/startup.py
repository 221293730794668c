"""What a ponder process sets before it imports its modules (``ponder``, ``python -m worker``).

- **One BLAS thread.** ponder's numerics are small: Bradley-Terry fits over at most a few hundred
  candidates, the bootstrap's batched products (``workflows.tournament.bootstrap`` keeps them off
  BLAS already), a campaign's statistics. OpenBLAS's pool, a thread per core, only costs there:
  it doubled the CPU of importing numpy (0.17-0.26 s against 0.09-0.13 s, six of each on the
  2-core machine), and on a busy worker its threads wait for cores (a 0.2 ms solve was seen
  taking 50 ms). OpenBLAS reads the variable when numpy loads it; a setting of the user's own
  wins.
- **No cyclic garbage collection while importing.** A worker's modules allocate about 110,000
  objects that live as long as the process, and the collector's passes over them (277 of them,
  two full) took 0.17-0.22 s of the 1.5-1.9 s those imports cost. ``imports_done`` turns it back
  on, with what was loaded so far frozen out of later passes: connecting calls it
  (``worker.connect.before_connect``), and so does a command that runs long without connecting.
  Short commands that never connect (a read of the run store, a validation) end with it off.

A program that drives ``client.api`` in its own process calls neither, and keeps its own settings.
"""

from __future__ import annotations

import gc
import os

__all__ = ["BLAS_THREADS", "imports_done", "start_process"]

BLAS_THREADS = "OPENBLAS_NUM_THREADS"

_collection_paused = False


def start_process() -> None:
    """First thing in an entry point, before anything imports numpy."""
    global _collection_paused
    os.environ.setdefault(BLAS_THREADS, "1")
    if gc.isenabled():
        gc.disable()
        _collection_paused = True


def imports_done() -> None:
    """Collect again, if ``start_process`` paused it; a no-op anywhere else."""
    global _collection_paused
    if _collection_paused:
        _collection_paused = False
        gc.freeze()
        gc.enable()
