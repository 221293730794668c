"""Call slots of pipelined rounds: a width per lane (and per provider, or the run's), first come
first served.

Plain asyncio (no Temporal import), deterministic given the order tasks run in, which a workflow's
history fixes. A waiter is granted a slot when its lane (and its provider or the run, if they
have a width) has room; waiters are served in arrival order among those with room, so a full
lane never holds up another lane's calls, and a call that arrived first is never passed by a
later one with room. (Two semaphores taken one after the other would not do: a call waiting for its
lane is not yet in the run's queue, so later calls of another lane overtake it, e.g. judge calls
the mutations their pairs wait for.)

A call may also hold a slot of its provider: a provider's width is the widest concurrency of the
roles that call it, so overlapping phases never send it more calls at once than one phase may
(a barrier run's most). Roles on different providers overlap at their own widths. Pipelined
runs started before that gave each lane its own width with nothing shared (a judging phase
beside the calls making its candidates sent one provider up to both widths), and runs started
before those a run-wide width as wide as the widest lane.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Mapping

__all__ = ["Slot", "Slots", "provider_widths"]


def provider_widths(
    widths: Mapping[str, int], providers: Mapping[str, Iterable[str]]
) -> dict[str, int]:
    """Provider -> its width: the widest lane among those whose calls go to it (``providers``:
    lane -> the providers of its calls), so phases overlapping on one provider send it no more
    calls at once than the widest of them would alone."""
    out: dict[str, int] = {}
    for lane, width in widths.items():
        for provider in providers.get(lane, ()):
            out[provider] = max(out.get(provider, 0), width)
    return out


class Slots:
    def __init__(
        self,
        widths: Mapping[str, int],
        run_width: int | None = None,
        provider_widths: Mapping[str, int] | None = None,
    ) -> None:
        self.free = sum(widths.values()) if run_width is None else run_width
        """Run-wide slots free (with no run-wide width, every lane's: never the binding one)."""
        self.lane_free = dict(widths)
        self.provider_free = dict(provider_widths or {})
        """Provider -> its slots free; a call whose provider is not here holds none."""
        self.waiting: deque[tuple[str, str | None, asyncio.Future[None]]] = deque()

    def slot(self, lane: str, provider: str | None = None) -> Slot:
        return Slot(self, lane, provider)

    async def acquire(self, lane: str, provider: str | None = None) -> None:
        granted = asyncio.get_running_loop().create_future()
        self.waiting.append((lane, provider, granted))
        self._grant()
        try:
            await granted
        except asyncio.CancelledError:
            if granted.cancelled():
                self.waiting.remove((lane, provider, granted))
            else:  # granted, then cancelled before it could run: give the slot back
                self.release(lane, provider)
            raise

    def release(self, lane: str, provider: str | None = None) -> None:
        self.free += 1
        self.lane_free[lane] += 1
        if provider in self.provider_free:
            self.provider_free[provider] += 1
        self._grant()

    def _room(self, lane: str, provider: str | None) -> bool:
        if self.lane_free[lane] <= 0:
            return False
        return provider not in self.provider_free or self.provider_free[provider] > 0

    def _grant(self) -> None:
        for waiter in list(self.waiting):
            if self.free == 0:
                return
            lane, provider, granted = waiter
            if self._room(lane, provider):
                self.waiting.remove(waiter)
                self.free -= 1
                self.lane_free[lane] -= 1
                if provider in self.provider_free:
                    self.provider_free[provider] -= 1
                granted.set_result(None)


class Slot:
    """``async with slots.slot(lane, provider):`` holds one slot of the run, one of ``lane``
    and one of ``provider`` (if it has a width)."""

    def __init__(self, slots: Slots, lane: str, provider: str | None = None) -> None:
        self.slots, self.lane, self.provider = slots, lane, provider

    async def __aenter__(self) -> None:
        await self.slots.acquire(self.lane, self.provider)

    async def __aexit__(self, *_: object) -> None:
        self.slots.release(self.lane, self.provider)
