"""A run's completion outlasts a late cancel: once its work is done, a cancel is too late.

Every run ends by writing its files (the summary says ``completed``) and waiting for its
handlers. A cancel requested during that last stretch used to interrupt it: the run ended
cancelled in Temporal while its summary said completed (seen: a campaign cancelled while it
wrote its final report). Now the completion runs to its end and the run completes; ``ponder
cancel`` then reports ``completed``.

Runs recorded before ``LATE_CANCEL_PATCH`` replay the old way: the completion is cancelled with
them.
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
            task.cancel()
            raise
        await workflow.wait([task])
    return task.result()
