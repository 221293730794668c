"""A run's completion outlasts a late cancel: once its work is done, a cancel is too late.

Every run ends by writing its files (the summary says ``completed``) and waiting for its
handlers. A cancel requested during that last stretch used to interrupt it: the run ended
cancelled in Temporal while its summary said completed (seen: a campaign cancelled while it
wrote its final report). Now the completion runs to its end and the run completes; ``ponder
cancel`` then reports ``completed``.

Runs recorded before ``LATE_CANCEL_PATCH`` replay the old way: the cancel is delivered into the
completion, as when it was awaited in the run's own task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from temporalio import workflow

__all__ = ["LATE_CANCEL_PATCH", "complete_despite_cancel"]

T = TypeVar("T")
LATE_CANCEL_PATCH = "late-cancel-completes"


async def complete_despite_cancel(completion: Coroutine[Any, Any, T]) -> T:
    """Run ``completion`` (the run's last writes and waits) to its end, even when the run is
    cancelled meanwhile. ``workflow.wait``, not ``asyncio.shield``: a cancelled wait leaves
    its task alone and logs nothing."""
    task = asyncio.create_task(completion)
    try:
        await workflow.wait([task])
    except asyncio.CancelledError:
        # Asked only when a cancel arrives: a run that never meets one records no marker.
        if not workflow.patched(LATE_CANCEL_PATCH):
            # A run recorded before: the cancel goes where it went then, into the completion,
            # which decides as it did (a writer that catches a cancelled write and writes again
            # completed the run; anything else let the cancel end it).
            task.cancel()
        await workflow.wait([task])
    return task.result()
