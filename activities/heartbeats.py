"""Heartbeats of long activities, so a killed worker delays the work by seconds, not minutes.

An activity without a heartbeat timeout is retried on another worker only when its
start-to-close timeout runs out (15 minutes for a campaign cell's settle step): every activity
that can take longer than a few seconds heartbeats while it works and is scheduled with a
heartbeat timeout (``HEARTBEAT_TIMEOUT`` for ponder's own activities; a model call's comes from
the run's ``calls.heartbeat_timeout_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import ParamSpec, TypeVar

from temporalio import activity

from workflows.activity_contracts import HEARTBEAT_TIMEOUT

__all__ = ["HEARTBEAT_TIMEOUT", "heartbeating", "in_thread"]

P = ParamSpec("P")
T = TypeVar("T")


@contextlib.asynccontextmanager
async def heartbeating() -> AsyncIterator[None]:
    """Heartbeat every third of the activity's heartbeat timeout (at most 5 s) until the block
    ends; the loop stays free, since the work itself runs in a thread or awaits I/O.

    The first beat comes one interval in, not at once: the server counts the heartbeat
    timeout from the attempt's start, so a beat at a third of it is as safe, and a block that
    ends sooner (most model calls of a simulated or fast provider) sends none at all.
    """
    timeout = activity.info().heartbeat_timeout or timedelta(seconds=30)
    interval = max(0.2, min(timeout.total_seconds() / 3, 5.0))
    # A timer, not a task: most blocks end before the first beat, and a timer handle costs a
    # fraction of a task's creation, scheduling and cancellation on the shared event loop.
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()  # activity.heartbeat() reads the activity's context
    handle: asyncio.TimerHandle | None = None

    def beat() -> None:
        nonlocal handle
        activity.heartbeat()
        handle = loop.call_later(interval, beat, context=context)

    handle = loop.call_later(interval, beat, context=context)
    try:
        yield
    finally:
        handle.cancel()


async def in_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args)`` in a worker thread (files and CPU never stall the event loop) while the
    activity heartbeats."""
    async with heartbeating():
        return await asyncio.to_thread(fn, *args, **kwargs)
