"""What a command that follows a run shows of a model call that failed and will be retried.

The server's description of a run lists its pending activities. For a model call between two
attempts it holds the attempt that failed (one before the one it will make next), the most
attempts its retry policy allows (the policy the workflow scheduled the call with, so the run's
own, never this client's), that attempt's failure as the worker reported it (redacted there,
before it left the worker) and the interval before the next attempt. A follower polls it and
prints one line per failed attempt: a refused connection shows within a poll of the attempt,
instead of after the last retry, and the retries after it show that they happen. The run's own
coded failure still ends the command.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from workflows.activity_contracts import CALL_MODEL

__all__ = ["POLL_S", "FailedAttempt", "RetryLines", "failed_attempts", "retries_shown"]

POLL_S = 0.5
"""How often a follower asks: a retry waits at least a second, so no attempt goes unseen."""

_WAITING = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
_RUNNING = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


@dataclass(frozen=True)
class FailedAttempt:
    """One failed attempt of one model call, as the server describes the call after it."""

    call: str
    """Which call: its activity id (after the run id, when given one)."""
    attempt: int
    maximum: int
    """The most attempts the call's retry policy allows; 0: no limit."""
    code: str
    message: str
    next_in_s: float | None
    """Seconds until the next attempt starts; None: it has started already."""


def failed_attempts(pending: Iterable[PendingActivityInfo], run: str = "") -> list[FailedAttempt]:
    """The model calls in ``pending`` whose last attempt failed and that will be tried again;
    ``run`` (the run's Temporal run id) tells apart the calls of runs a chain continued into,
    whose activity ids start again."""
    found = []
    for info in pending:
        if (
            info.activity_type.name != CALL_MODEL
            or not info.HasField("last_failure")
            or info.state not in (_WAITING, _RUNNING)
            or info.attempt < 2
        ):
            continue
        waiting = info.state == _WAITING and info.HasField("current_retry_interval")
        found.append(
            FailedAttempt(
                call=f"{run}/{info.activity_id}" if run else info.activity_id,
                attempt=info.attempt - 1,
                maximum=info.maximum_attempts,
                code=info.last_failure.application_failure_info.type,
                message=info.last_failure.message,
                next_in_s=info.current_retry_interval.ToTimedelta().total_seconds()
                if waiting
                else None,
            )
        )
    return found


def _printable(text: str) -> str:
    """``text`` with its control characters escaped: a message can quote what an endpoint sent,
    and the terminal must not take an escape sequence in it for one of its own."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class RetryLines:
    """The lines to print for what a poll saw: the first failed attempt of a call (or a new
    failure) in full, a repeat of the same failure in short."""

    def __init__(self) -> None:
        self._shown: dict[str, tuple[int, str]] = {}
        """call -> (the last attempt shown, its message)."""

    def lines(self, attempts: Iterable[FailedAttempt]) -> list[str]:
        """One line per failed attempt not shown yet; calls that failed alike share one
        (``8 calls: ...``), so a tournament's first round against a stopped server is one line."""
        counts: dict[str, int] = {}
        for line in self._new_lines(attempts):
            counts[line] = counts.get(line, 0) + 1
        return [f"{n} calls: {line}" if n > 1 else line for line, n in counts.items()]

    def _new_lines(self, attempts: Iterable[FailedAttempt]) -> list[str]:
        out = []
        for failed in attempts:
            before = self._shown.get(failed.call)
            if before is not None and before[0] >= failed.attempt:
                continue
            self._shown[failed.call] = (failed.attempt, failed.message)
            of = f" of {failed.maximum}" if failed.maximum else ""
            if before is not None and before[1] == failed.message:
                line = f"attempt {failed.attempt}{of} failed the same way"
            else:
                code = f" ({failed.code})" if failed.code else ""
                line = f"attempt {failed.attempt}{of} failed{code}: {_printable(failed.message)}"
            following = failed.attempt + 1
            if failed.next_in_s is None:
                line += f"; attempt {following} runs"
            else:
                line += f"; attempt {following} in {round(failed.next_in_s, 1):g}s"
            if before is None:
                line += " (Ctrl-C detaches, the run goes on)"
            out.append(line)
        return out


async def _show(handle: WorkflowHandle, echo: Callable[[str], None], poll_s: float) -> None:
    lines = RetryLines()
    while True:
        await asyncio.sleep(poll_s)
        try:
            description = await handle.describe()
        except RPCError:
            continue  # a restarting server: waiting for the result rides it out and says so
        pending = description.raw_description.pending_activities
        for line in lines.lines(failed_attempts(pending, description.run_id)):
            echo(line)


@contextlib.asynccontextmanager
async def retries_shown(
    handle: WorkflowHandle, echo: Callable[[str], None], *, poll_s: float = POLL_S
) -> AsyncIterator[None]:
    """While the block runs, ``echo`` a line for each failed attempt of the run's model calls.

    The first poll comes ``poll_s`` in: a run that answers sooner costs no request."""
    task = asyncio.create_task(_show(handle, echo, poll_s))
    try:
        yield
    finally:
        task.cancel()
