"""One BLAS thread in every ponder process.

ponder's numerics are small: Bradley-Terry fits over at most a few hundred candidates, the
bootstrap's batched products (``workflows.tournament.bootstrap`` keeps them off BLAS already), a
campaign's statistics. OpenBLAS's thread pool only costs there: started with a thread per core,
it doubled the CPU of importing numpy (0.17-0.26 s against 0.09-0.13 s, six of each on the
2-core machine), which every command that runs a worker pays, and on a busy worker its threads
wait for cores (a 0.2 ms solve was seen taking 50 ms). OpenBLAS reads the variable when numpy
loads it, so the entry points call this before anything imports numpy; a setting of the user's
own wins. A program that drives ``client.api`` in its own process keeps whatever it set.
"""

from __future__ import annotations

import os

__all__ = ["BLAS_THREADS", "use_one_blas_thread"]

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def use_one_blas_thread() -> None:
    os.environ.setdefault(BLAS_THREADS, "1")
