"""What every ponder process sets before it imports its modules (``worker.startup``): one BLAS
thread unless its user chose otherwise, and no cyclic garbage collection until it connects."""

from __future__ import annotations

import os
import subprocess
import sys

BLAS_PROBE = """
import os, sys
from worker.startup import start_process
if sys.argv[1] == "start":
    start_process()
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def probe(code: str, *args: str, **env: str) -> list[str]:
    """What ``code`` prints in a fresh interpreter (with ``env`` over ours, less any BLAS
    setting): only a fresh process shows what its imports start."""
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.split()


def test_numpy_loaded_after_the_start_runs_one_thread() -> None:
    assert probe(BLAS_PROBE, "start") == ["1", "1"]  # the variable, and the process's only thread


def test_without_the_start_openblas_starts_a_thread_per_core() -> None:
    """What the setting saves, on this machine: OpenBLAS starts one thread per core it may use."""
    variable, threads = probe(BLAS_PROBE, "no-start")
    assert variable == "None"
    assert int(threads) == min(len(os.sched_getaffinity(0)), 64)


def test_a_users_own_blas_setting_wins() -> None:
    assert probe(BLAS_PROBE, "start", OPENBLAS_NUM_THREADS="2")[0] == "2"


GC_PROBE = """
import gc, sys
from worker.startup import start_process
if sys.argv[1] == "program-disabled":
    gc.disable()
start_process()
paused = not gc.isenabled()
from worker.connect import before_connect  # what every connect runs first
before_connect()
print(paused, gc.isenabled(), gc.get_freeze_count() > 0)
"""


def test_collection_is_paused_while_importing_and_back_once_connecting() -> None:
    # Paused from the start; on again at the first connect, with the imports frozen out of it.
    assert probe(GC_PROBE, "default") == ["True", "True", "True"]


def test_a_program_that_turned_collection_off_keeps_it_off() -> None:
    assert probe(GC_PROBE, "program-disabled") == ["True", "False", "False"]
