"""What a ponder process sets before it imports its modules (``ponder``, ``python -m worker``).

- **One BLAS thread.** ponder's numerics are small: Bradley-Terry fits over at most a few hundred
  candidates, the bootstrap's batched products (``workflows.tournament.bootstrap`` keeps them off
  BLAS already), a campaign's statistics. OpenBLAS's pool, a thread per core, only costs there:
  it doubled the CPU of importing numpy (0.17-0.26 s against 0.09-0.13 s, six of each on the
  2-core machine), and on a busy worker its threads wait for cores (a 0.2 ms solve was seen
  taking 50 ms). OpenBLAS reads the variable when numpy loads it; a setting of the user's own
  wins.
- **The cyclic garbage collector, decided by process kind.** Every process starts with it paused:
  a worker's modules allocate about 110,000 objects that live as long as the process, and the
  collector's passes over them (277 of them, two full) took 0.17-0.22 s of the 1.5-1.9 s those
  imports cost. ``imports_done`` turns it back on, with what was loaded so far frozen out of
  later passes. Who calls it, and why:

  - ``ponder worker`` (a cluster's or the embedded server's), the background worker a command
    leaves (``ponder worker --embedded``) and ``python -m worker``: on at their connect
    (``worker.connect.before_connect``). They run for hours, and the cycles that activations,
    failures and their tracebacks make must be collected.
  - A command that runs a worker in process (``think``, ``ask``, ``plan run`` with no background
    worker alive) or is a client only (that worker serves its runs): on at its connect. Its own
    imports are done by then (the worker's load on a thread before it), and it may follow a run
    for an hour.
  - ``ponder mcp`` and ``ponder server``: on as they start serving (``client.mcp.cli``,
    ``client.server_cli``). Both serve until stopped, the MCP server answering for as long as its
    clients like before one makes it connect (the server never does); what they load after that
    (the MCP server's session and tools) loads collected.
  - A command that never connects (a read of the run store, a validation, a dry run, a refusal,
    ``--help``): off until it exits. Its work is bounded by its input and exiting hands the
    process's memory back whole, while collecting would cost it 15-70 ms of the 0.3 s such a
    command aims for (``plan validate``, ``think --dry-run``, ``runs``: 3-5 ms of collection
    with it off, 16-78 ms on).

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
