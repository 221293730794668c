"""The lines a follower prints for a model call's failed attempts, and those attempts as the
server's HTTP API describes them; no SDK import (``client.call_progress`` reads the same from
the SDK's description and prints the same lines).

A follower that starts over the HTTP API (``client.ask_http``) shows the first lines itself,
then hands its ``RetryLines`` to the SDK follower that takes the run over, so no line shows
twice and none goes missing in the hand-over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import click

from workflows.activity_contracts import CALL_MODEL

__all__ = ["POLL_S", "FailedAttempt", "RetryLines", "failed_attempts_in_json", "to_stderr"]

POLL_S = 0.5
"""How often a follower asks: a retry waits at least a second, so no attempt goes unseen."""

_WAITING = "PENDING_ACTIVITY_STATE_SCHEDULED"
_RUNNING = "PENDING_ACTIVITY_STATE_STARTED"


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


def to_stderr(line: str) -> None:
    """Echo for a follower that prints plain lines (``ask``, ``watch`` of an ask, a campaign)."""
    click.echo(f"ponder: {line}", err=True)


def failed_attempts_in_json(
    pending: Iterable[dict[str, Any]], run: str = ""
) -> list[FailedAttempt]:
    """``client.call_progress.failed_attempts`` of a description's ``pendingActivities`` as
    the HTTP API gives them (proto JSON: an unset message is absent, a duration is ``"1.5s"``)."""
    found = []
    for info in pending:
        attempt = int(info.get("attempt", 0))
        state = info.get("state")
        if (
            info.get("activityType", {}).get("name") != CALL_MODEL
            or "lastFailure" not in info
            or state not in (_WAITING, _RUNNING)
            or attempt < 2
        ):
            continue
        interval = info.get("currentRetryInterval")
        failure = info["lastFailure"]
        activity_id = info.get("activityId", "")
        found.append(
            FailedAttempt(
                call=f"{run}/{activity_id}" if run else activity_id,
                attempt=attempt - 1,
                maximum=int(info.get("maximumAttempts", 0)),
                code=failure.get("applicationFailureInfo", {}).get("type", ""),
                message=failure.get("message", ""),
                next_in_s=float(interval.removesuffix("s"))
                if state == _WAITING and isinstance(interval, str)
                else None,
            )
        )
    return found
