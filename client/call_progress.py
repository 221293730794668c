"""What a command that follows a run shows of a model call that failed and will be retried.

The server's description of a run lists its pending activities. For a model call between two
attempts it holds the attempt that failed (one before the one it will make next), the most
attempts its retry policy allows (the policy the workflow scheduled the call with, so the run's
own, never this client's), that attempt's failure as the worker reported it (redacted there,
before it left the worker) and the interval before the next attempt. A follower polls it and
prints one line per failed attempt: a refused connection shows within a poll of the attempt,
instead of after the last retry, and the retries after it show that they happen. The run's own
coded failure still ends the command.

Every follower shows them the same way (``retries_shown``): ``ask``, ``watch``, a tournament's,
a plan run's and a campaign's. A plan run's tournament steps and a campaign's cells are child
workflows whose calls are pending on the child, not on the run, so the children the run is
waiting on are described too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from client.retry_lines import POLL_S, FailedAttempt, RetryLines, to_stderr
from workflows.activity_contracts import CALL_MODEL

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "CHILD_DEPTH",
    "MAX_CHILDREN",
    "POLL_S",
    "FailedAttempt",
    "RetryLines",
    "above_panel",
    "failed_attempts",
    "retries_shown",
    "to_stderr",
]

CHILD_DEPTH = 1
"""How far below the run a poll looks: its children (a campaign's cells, a plan run's
tournament steps), which start none of their own."""
MAX_CHILDREN = 16
"""Children described per level and poll: a wide fan-out costs a bounded number of requests,
and calls refused alike (one endpoint down) fail the same way in the children left out."""

_WAITING = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
_RUNNING = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


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


def above_panel(console: Console) -> Callable[[str], None]:
    """Echo for a follower with a live panel on ``console``: each line goes above the panel."""

    def echo(line: str) -> None:
        console.print(f"ponder: {line}", highlight=False, soft_wrap=True)

    return echo


async def _failed_in(
    handle: WorkflowHandle, client: Client | None, depth: int
) -> list[FailedAttempt]:
    """The failed attempts pending on the run, and on the children it waits on (``client``)."""
    try:
        description = await handle.describe()
    except RPCError:
        return []  # a restarting server, or a child that just closed
    raw = description.raw_description
    found = failed_attempts(raw.pending_activities, description.run_id)
    if client is None or depth == 0:
        return found
    children = [
        client.get_workflow_handle(child.workflow_id, run_id=child.run_id)
        for child in list(raw.pending_children)[:MAX_CHILDREN]
    ]
    for below in await asyncio.gather(*(_failed_in(c, client, depth - 1) for c in children)):
        found.extend(below)
    return found


async def _show(
    handle: WorkflowHandle,
    echo: Callable[[str], None],
    poll_s: float,
    client: Client | None,
    lines: RetryLines,
) -> None:
    while True:
        await asyncio.sleep(poll_s)
        for line in lines.lines(await _failed_in(handle, client, CHILD_DEPTH)):
            echo(line)


@contextlib.asynccontextmanager
async def retries_shown(
    handle: WorkflowHandle,
    echo: Callable[[str], None],
    *,
    client: Client | None = None,
    poll_s: float = POLL_S,
    lines: RetryLines | None = None,
) -> AsyncIterator[None]:
    """While the block runs, ``echo`` a line for each failed attempt of the run's model calls;
    given ``client``, of its pending children's calls too; given ``lines``, after the ones they
    showed (a follower that took the run over from another, ``client.ask_http``).

    The first poll comes ``poll_s`` in: a run that answers sooner costs no request."""
    task = asyncio.create_task(_show(handle, echo, poll_s, client, lines or RetryLines()))
    try:
        yield
    finally:
        task.cancel()
