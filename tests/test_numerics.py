"""Every ponder process runs numpy on one BLAS thread unless its user chose otherwise
(``worker.numerics``): OpenBLAS's pool doubled the CPU of importing numpy."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import os, sys
from worker.numerics import use_one_blas_thread
if sys.argv[1] == "pin":
    use_one_blas_thread()
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def probe(mode: str, **env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.split()


def test_numpy_loaded_after_the_pin_runs_one_thread() -> None:
    assert probe("pin") == ["1", "1"]  # the variable, and the process's only thread


def test_without_the_pin_openblas_starts_a_thread_per_core() -> None:
    """What the pin saves, on this machine: OpenBLAS starts one thread per core it may use."""
    variable, threads = probe("no-pin")
    assert variable == "None"
    assert int(threads) == min(len(os.sched_getaffinity(0)), 64)


def test_a_users_own_setting_wins() -> None:
    assert probe("pin", OPENBLAS_NUM_THREADS="2")[0] == "2"
