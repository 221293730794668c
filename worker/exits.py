"""How every ponder process exits (CLI and worker alike); imports nothing heavy, so a ``--help``
that only prints pays nothing for it."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn

__all__ = ["leave"]


def leave(code: int) -> NoReturn:
    """Every exit of a ponder process: flush, then leave without interpreter finalization.

    The Temporal core runtime's threads may still hold a callback into Python (an RPC that
    completed as the process ended); finalizing under them aborts the process with
    "PyGILState_Release ... finalizing" (exit 134). Workers are shut down by now, so nothing is
    left to clean up.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)
