"""``ponder status`` from the server: a run's own view, by kind (``client.status_cli`` shows an
ended run from its run store while the embedded server is down).

A read of a live run should answer at once (under 0.5 s with a server up), and most of
its time was imports. So this module loads the SDK client and the session alone; a run kind's
types and display (a tournament's ``Progress`` and rich tables, a plan's status, a campaign's
statistics) are imported once ``describe`` has said which kind the run is, and no other kind's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio.client import (
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)

from activities.config import Settings
from client.ask_view import ask_view, print_ask_view
from client.run_list import state_name
from client.runs import failure_message, through_restarts
from client.session import Session, open_session, query_answerer
from workflows.names import ASK, CAMPAIGN, PLAN_RUN, QUERY_PROGRESS
from workflows.run_ids import check_run_id

__all__ = ["show_status"]

Printer = Callable[[], None]
"""What ``status`` prints, once the session is closed."""


async def _ask_view(
    session: Session, handle: WorkflowHandle, description: WorkflowExecutionDescription
) -> dict[str, Any]:
    """What ``status`` shows of an Ask run: its state, model, usage and answer or error."""
    status = state_name(description.status)
    started, ended = description.start_time, description.close_time
    if description.status == WorkflowExecutionStatus.COMPLETED:
        from workflows.ask_types import AskResult

        ask = session.client.get_workflow_handle(handle.id, result_type=AskResult)
        result: AskResult = await ask.result()
        response = result.response
        return ask_view(
            handle.id,
            status,
            started,
            ended,
            answered_by=f"{response.provider}:{response.model}",
            simulated=response.simulated,
            usage=response.usage.model_dump(),
            usd=response.usd,
            answer_path=result.answer_path,
        )
    error = None
    if description.status in (WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.CANCELED):
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            error = failure_message(exc)
    view = ask_view(handle.id, status, started, ended, error=error)
    if description.status == WorkflowExecutionStatus.RUNNING:
        from workflows.ask import LEDGER_WAIT_MEMO

        wait = await description.memo_value(LEDGER_WAIT_MEMO, None)
        if isinstance(wait, dict):  # its shared ledger is spent: say what lets it go on
            name, limit = wait.get("ledger"), wait.get("limit")
            view["waiting_for"] = f"ledger {name} ({limit}): ponder ledger extend {name}"
    return view


async def _plan_view(handle: WorkflowHandle, settings: Settings, *, as_json: bool) -> Printer:
    from client.plan_display import print_plan_status
    from client.plan_follow import plan_status

    shown = await plan_status(handle)
    return lambda: print_plan_status(shown, as_json=as_json, settings=settings)


async def _campaign_view(handle: WorkflowHandle, *, as_json: bool) -> Printer:
    from client.campaign_control import query_progress
    from client.campaign_display import print_status

    shown = await query_progress(handle)
    return lambda: print_status(shown, as_json=as_json)


async def _tournament_view(handle: WorkflowHandle, *, as_json: bool) -> Printer:
    from client.tournament_display import print_progress, print_progress_json
    from client.tournament_follow import run_times
    from workflows.tournament.types import Progress

    progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
    if as_json:
        return lambda: print_progress_json(progress)
    times = await run_times(handle)  # after the query: the close time of a run that just ended
    return lambda: print_progress(handle.id, progress, *times)


def show_status(settings: Settings, run_id: str, *, as_json: bool) -> None:
    """``ponder status`` from the server: the run's own view, by kind."""

    async def look(session: Session) -> Printer:
        handle = session.client.get_workflow_handle(check_run_id(run_id))
        description = await handle.describe()
        kind = description.workflow_type
        if kind == ASK:  # describe and result: no query
            view = await _ask_view(session, handle, description)
            return lambda: print_ask_view(view, as_json=as_json)
        async with query_answerer(session, description.task_queue):
            if kind == PLAN_RUN:
                return await _plan_view(handle, settings, as_json=as_json)
            if kind == CAMPAIGN:
                return await _campaign_view(handle, as_json=as_json)
            return await _tournament_view(handle, as_json=as_json)

    async def go() -> Printer:
        # A query needs a worker: the one polling the run's queue answers it if there is one,
        # else one runs here (``query_answerer``). Only reads: retried whole through a server
        # restart, like a command that waits on a run.
        async with open_session(settings, worker=False) as session:
            return await through_restarts(lambda: look(session))

    asyncio.run(go())()
