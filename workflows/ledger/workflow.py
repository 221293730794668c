"""The ``Ledger`` entity workflow: one per ledger name, the one place its spend is counted.

Runs reach it from their call activities by update-with-start (``activities/ledger.py``): the
first draw starts it with the worker's ``[ledgers.NAME]`` limits, later ones find it running.
Its handlers only touch the book (``workflows.ledger.arithmetic``), so they never await and need
no lock; the main loop keeps time: it expires holds, rolls periods, tells refused runs when there
is room again (``ledger_room``), and continues as new, carrying the book, before the history
grows large.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from datetime import UTC, datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import InputInvalid
    from workflows.ledger.arithmetic import Book
    from workflows.ledger.types import (
        DrawInput,
        DrawResult,
        ExtendLedgerInput,
        LedgerInput,
        LedgerView,
        SettleBatch,
    )
    from workflows.names import (
        LEDGER,
        QUERY_LEDGER,
        SIGNAL_LEDGER_ROOM,
        UPDATE_LEDGER_DRAW,
        UPDATE_LEDGER_EXTEND,
        UPDATE_LEDGER_SETTLE,
    )
    from workflows.raw_input import NO_INPUT, decode_raw, input_failure

__all__ = ["LedgerWorkflow"]


@workflow.defn(name=LEDGER)
class LedgerWorkflow:
    @workflow.init
    def __init__(self, raw: object = NO_INPUT, *extra: object) -> None:
        # Anyone may start ``ledger-NAME``: input that does not decode fails the run with
        # input.invalid, and the next draw starts a good one.
        decoded = decode_raw(LedgerInput, raw, extra)
        self.input_error = decoded if isinstance(decoded, InputInvalid) else None
        input = decoded if isinstance(decoded, LedgerInput) else LedgerInput(name="invalid")
        self.name = input.name
        self.token_sha256 = input.token_sha256
        self.messages_per_run = input.messages_per_run
        self.book = (
            Book.model_validate(input.book)
            if input.book is not None
            else Book(limits=input.limits, ttl_s=input.hold_ttl_s)
        )
        self.messages = 0
        self.changed = False

    def _holds_token(self, digest: str) -> bool:
        return bool(self.token_sha256) and hmac.compare_digest(digest, self.token_sha256)

    def _now(self) -> float:
        return workflow.now().timestamp()

    def _continue_now(self) -> bool:
        return (
            self.messages >= self.messages_per_run or workflow.info().is_continue_as_new_suggested()
        )

    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> None:
        if self.input_error is not None:
            raise input_failure(self.input_error)
        while True:
            self.book.advance(self._now())
            waiters = self.book.take_waiters()
            if waiters:
                await asyncio.gather(*(self._tell(holder) for holder in waiters))
            if self._continue_now():
                await workflow.wait_condition(workflow.all_handlers_finished)
                self.book.advance(self._now())
                workflow.continue_as_new(
                    LedgerInput(
                        name=self.name,
                        limits=self.book.limits,
                        hold_ttl_s=self.book.ttl_s,
                        token_sha256=self.token_sha256,
                        messages_per_run=self.messages_per_run,
                        book=self.book.model_dump(mode="json"),
                    )
                )
            deadline = self.book.next_deadline()
            timeout = None
            if deadline is not None:
                timeout = timedelta(seconds=max(deadline - self._now(), 0.001))
            self.changed = False
            # Timing out means a hold expired or a period began: the loop's top handles both.
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(
                    lambda: self.changed or self._continue_now(), timeout=timeout
                )

    async def _tell(self, holder: str) -> None:
        try:
            await workflow.get_external_workflow_handle(holder).signal(
                SIGNAL_LEDGER_ROOM, self.name
            )
        except Exception:
            workflow.logger.info("ledger %s: run %s is gone", self.name, holder)

    @workflow.update(name=UPDATE_LEDGER_DRAW)
    def draw(self, input: DrawInput) -> DrawResult:
        self.messages += 1
        if not self._holds_token(input.token_sha256):
            return DrawResult(granted=0, blocking="token")
        now = self._now()
        self.book.advance(now)
        result = self.book.draw(input.key, input.holder, input.calls, now)
        self.changed = True
        return result

    @workflow.update(name=UPDATE_LEDGER_SETTLE)
    def settle(self, input: SettleBatch) -> None:
        self.messages += 1
        now = self._now()
        self.book.advance(now)
        for report in input.reports:
            self.book.settle(report, now)
        self.changed = True

    @settle.validator
    def _check_settle(self, input: SettleBatch) -> None:
        if not self._holds_token(input.token_sha256):
            raise ValueError(f"ledger {self.name}: reports need its draw token")

    @workflow.update(name=UPDATE_LEDGER_EXTEND)
    def extend(self, input: ExtendLedgerInput) -> LedgerView:
        self.messages += 1
        self.book.advance(self._now())
        self.book.extend(input.calls, input.tokens, input.usd)
        self.changed = True
        return self.view()

    @extend.validator
    def _check_extend(self, input: ExtendLedgerInput) -> None:
        if not self._holds_token(input.token_sha256):
            raise ValueError(
                f"ledger {self.name}: extending needs its draw token: run `ponder ledger "
                "extend` where the ledger's token file is readable"
            )
        book = self.book.model_copy(deep=True)  # a validator changes nothing
        book.advance(self._now())
        problems = book.extend(input.calls, input.tokens, input.usd)
        if problems:
            raise ValueError("; ".join(problems))

    @workflow.query(name=QUERY_LEDGER)
    def view(self) -> LedgerView:
        book = self.book
        start = book.period_start()
        return LedgerView(
            name=self.name,
            limits=book.limits,
            period_start=None if start is None else workflow_time(start),
            calls=book.spent.calls,
            tokens=book.spent.tokens,
            usd=book.spent.usd,
            holds=len(book.holds),
            held_calls=book.held_calls(),
            waiting=list(book.waiters),
            blocking=book.blocking(),
            draws=book.draws,
            reports=book.reports,
        )


def workflow_time(seconds: float) -> str:
    """Seconds since the epoch as UTC ISO 8601 (no clock read: pure arithmetic)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat()
