"""Close a stopped worker's run the way the garbage collector would, at once and on one run."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from typing import Any


def close_like_the_collector(function: Callable[..., Any], local: str, run_id: str) -> None:
    """Close (``GeneratorExit``, outside any activation) the one suspended coroutine of
    ``function`` whose local ``local`` belongs to run ``run_id``; what its cleanup raises, the
    test sees."""
    suspended = [
        coroutine
        for coroutine in gc.get_objects()
        if inspect.iscoroutine(coroutine)
        and coroutine.cr_code is function.__code__
        and coroutine.cr_frame is not None
        and coroutine.cr_frame.f_locals[local].run_id == run_id
    ]
    assert len(suspended) == 1, f"{len(suspended)} suspended {function.__name__} of {run_id}"
    suspended[0].close()
