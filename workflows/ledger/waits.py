"""The run side of a shared ledger: pause ``awaiting_budget`` while it refuses, go on when told.

A call refused by its ledger fails its activity with ``ledger.spent`` (details: the ledger and
the limit). ``workflows.model_calls.call_model`` hands that to the run's ``LedgerRoom``, which
shows the pause through the run's own hooks and waits for the ledger's ``ledger_room`` signal
(sent once ``ponder ledger extend``, a hold handed back or a new period makes room), then the
call is scheduled again as the same logical call. The ledger registers the run as waiting in
the same update that refused it; the run counts the signals it got, and a call waits only for
one that came after it was scheduled, so a signal that lands before the refusal is seen is not
lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.ledger.types import LEDGER_SPENT, ledger_wait

__all__ = ["LedgerRoom", "ledger_refusal"]


def ledger_refusal(exc: BaseException) -> tuple[str, str] | None:
    """``(ledger, limit)`` if ``exc`` is a call its ledger refused."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    if not isinstance(cause, ApplicationError) or cause.type != LEDGER_SPENT:
        return None
    details = cause.details[0] if cause.details else None
    if not isinstance(details, dict):
        return None
    return str(details.get("ledger", "")), str(details.get("blocking", "calls"))


class LedgerRoom:
    """Counts the ``ledger_room`` signals a run got; holds its pause while calls wait."""

    def __init__(
        self,
        *,
        paused: Callable[[str, str], Awaitable[None]] | None = None,
        resumed: Callable[[str], None] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self.told = 0
        self.paused = paused
        self.resumed = resumed
        self.stopping = stopping
        self.waiting = 0
        """Calls waiting for room now."""
        self.blocking: str | None = None
        """``ledger NAME: LIMIT`` while a call waits (the run's status shows it)."""

    def room(self) -> None:
        """The ``ledger_room`` signal's handler."""
        self.told += 1

    async def wait(self, ledger: str, limit: str, seen: int) -> bool:
        """Wait for a ``ledger_room`` after the ``seen``-th; False if the run stops first."""
        self.waiting += 1
        if self.waiting == 1:
            self.blocking = ledger_wait(ledger, limit)
            if self.paused is not None:
                await self.paused(ledger, limit)
        closed = False
        try:
            await workflow.wait_condition(lambda: self.told > seen or self.stopping())
        except GeneratorExit:
            # Closed with its run (evicted): outside an activation the workflow API raises.
            closed = True
            raise
        finally:
            self.waiting -= 1
            if self.waiting == 0:
                self.blocking = None
                if self.resumed is not None and not closed:
                    self.resumed(ledger)
        return not self.stopping()
