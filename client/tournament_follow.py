"""Following a tournament: the live progress table, the pause hand-off and the outcome lines."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from client.call_progress import above_panel, retries_shown
from client.consoles import text_console
from client.exit_codes import EXIT_PAUSED
from client.live import live_panel
from client.runs import RunFailed, ctrl_c_detaches, detach, run_result
from client.session import Session
from client.tournament_display import progress_table
from client.tournament_outcome import print_outcome
from workflows.names import QUERY_PROGRESS
from workflows.tournament.types import Progress, TournamentResult

__all__ = ["EXIT_PAUSED", "console", "follow", "print_outcome", "run_times"]

console = text_console(stderr=True)


async def run_times(handle: WorkflowHandle) -> tuple[datetime | None, datetime | None]:
    """When the run started and (if it has) ended, from the server: the same for every viewer."""
    description = await handle.describe()
    return description.start_time, description.close_time


async def follow(session: Session, handle: WorkflowHandle) -> TournamentResult | Progress:
    """Show progress until the run ends (its result) or pauses on budget (its progress).

    Ctrl-C detaches: the run goes on (with a background worker in embedded mode).
    """
    started = None
    result_task = asyncio.ensure_future(run_result(handle))
    paused: Progress | None = None
    # Detaching from the first await on: a SIGTERM during the first RPC still hands over.
    with ctrl_c_detaches() as interrupted, live_panel(console, refresh_per_second=4) as live:
        with contextlib.suppress(RPCError):  # a restarting server: the clock is only shown
            started, _ = await run_times(handle)
        # A failed call attempt (a refused connection, a 503) is printed above the panel as it
        # happens, not only when the last retry fails the run.
        async with retries_shown(handle, above_panel(console), client=session.client):
            while not result_task.done():
                if interrupted.is_set():
                    result_task.cancel()
                    detach(session, handle.id)
                try:
                    progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
                except RPCError:
                    progress = None
                if progress is not None:
                    live.update(progress_table(progress, started))
                    # Paused: leave once the calls already dispatched have landed (paid once).
                    if progress.status == "awaiting_budget" and progress.in_flight == 0:
                        result_task.cancel()
                        paused = progress
                        break
                await asyncio.wait({result_task}, timeout=0.5)
        if paused is None:
            with contextlib.suppress(RPCError):  # the last frame shows the final state
                final = await handle.query(QUERY_PROGRESS, result_type=Progress)
                _, ended = await run_times(handle)
                live.update(progress_table(final, started, ended))
    if paused is not None:
        return paused
    try:
        return result_task.result()
    except WorkflowFailureError as exc:
        raise RunFailed.of(handle.id, exc) from exc
