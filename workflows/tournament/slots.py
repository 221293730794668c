"""Call slots of pipelined rounds: a width per lane (and maybe the run's), first come first served.

Plain asyncio (no Temporal import), deterministic given the order tasks run in, which a workflow's
history fixes. A waiter is granted a slot when its lane (and the run, if it has a width) has
room; waiters are served in arrival order among those whose lane has room, so a full lane never
holds up another lane's calls, and a call that arrived first is never passed by a later one of a
lane with room. (Two semaphores taken one after the other would not do: a call waiting for its
lane is not yet in the run's queue, so later calls of another lane overtake it, e.g. judge calls
the mutations their pairs wait for.)

Pipelined runs started since ``pipelined-lane-widths`` give each lane its own width and no
run-wide one: phases of different roles overlap, each at its own concurrency, which is what
lets a judging phase run beside the calls making its candidates (at concurrency 8 a shared
width of 8 kept pipelined / barrier near 0.85 where the lanes alone reach 0.76, see
``benchmarks/pipelining.py``). Runs started before keep the shared width of the widest lane.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping

__all__ = ["Slot", "Slots"]


class Slots:
    def __init__(self, widths: Mapping[str, int], run_width: int | None = None) -> None:
        self.free = sum(widths.values()) if run_width is None else run_width
        """Run-wide slots free (with no run-wide width, every lane's: never the binding one)."""
        self.lane_free = dict(widths)
        self.waiting: deque[tuple[str, asyncio.Future[None]]] = deque()

    def slot(self, lane: str) -> Slot:
        return Slot(self, lane)

    async def acquire(self, lane: str) -> None:
        granted = asyncio.get_running_loop().create_future()
        self.waiting.append((lane, granted))
        self._grant()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.cancelled():
                self.waiting.remove((lane, granted))
            else:  # granted, then cancelled before it could run: give the slot back
                self.release(lane)
            raise

    def release(self, lane: str) -> None:
        self.free += 1
        self.lane_free[lane] += 1
        self._grant()

    def _grant(self) -> None:
        for waiter in list(self.waiting):
            if self.free == 0:
                return
            lane, granted = waiter
            if self.lane_free[lane] > 0:
                self.waiting.remove(waiter)
                self.free -= 1
                self.lane_free[lane] -= 1
                granted.set_result(None)


class Slot:
    """``async with slots.slot(lane):`` holds one slot of the run and one of ``lane``."""

    def __init__(self, slots: Slots, lane: str) -> None:
        self.slots, self.lane = slots, lane

    async def __aenter__(self) -> None:
        await self.slots.acquire(self.lane)

    async def __aexit__(self, *_: object) -> None:
        self.slots.release(self.lane)
