"""What the commands on an existing run do: ``status`` (its server half), ``watch``, ``extend``,
``cancel``. ``client.tournament_control`` declares them and imports this module only when one
runs, so their ``--help`` loads no Temporal SDK.

Each works on a tournament; ``status`` and ``watch`` also give an Ask run its own view; a plan
run and a campaign get all of them (dispatch on the workflow type).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from activities.config import Settings
from activities.errors import ConfigError
from client import campaign_control
from client.budget_extend import extend_budget, new_limits
from client.hints import ponder_program
from client.plan_follow import (
    extend_plan_run,
    finish,
    plan_status,
    print_plan_status,
    watch_plan,
)
from client.run_list import state_name
from client.runs import failure_message, through_restarts, wait_or_detach
from client.session import Session, open_session, query_answerer, spawn_background_worker
from client.tournament_follow import (
    follow,
    print_outcome,
    progress_table,
    resume_command,
    run_times,
)
from workflows.ask_types import AskResult
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import ASK, CAMPAIGN, PLAN_RUN, QUERY_PROGRESS
from workflows.plan.run_types import PlanRunResult, PlanStatus
from workflows.run_ids import check_run_id
from workflows.tournament.types import Progress, TournamentResult

__all__ = ["cancel_run", "extend_run", "show_status", "watch_run"]

Followed = (
    TournamentResult | Progress | PlanRunResult | PlanStatus | CampaignResult | CampaignProgress
)


async def _handle(session: Session, run_id: str) -> WorkflowHandle:
    return session.client.get_workflow_handle(check_run_id(run_id), result_type=TournamentResult)


def _as_campaign(session: Session, handle: WorkflowHandle) -> WorkflowHandle:
    return session.client.get_workflow_handle(handle.id, result_type=CampaignResult)


async def _ask_view(session: Session, handle: WorkflowHandle) -> dict[str, Any]:
    """What ``status`` shows of an Ask run: its state, model, usage and answer or error."""
    description = await handle.describe()
    view: dict[str, Any] = {
        "run_id": handle.id,
        "kind": "ask",
        "status": state_name(description.status),
    }
    started, ended = description.start_time, description.close_time
    if started is not None and ended is not None:
        view["elapsed_s"] = round((ended - started).total_seconds(), 1)
    if description.status == WorkflowExecutionStatus.COMPLETED:
        ask = session.client.get_workflow_handle(handle.id, result_type=AskResult)
        result: AskResult = await ask.result()
        response = result.response
        view |= {
            "model": f"{response.provider}:{response.model}",
            "simulated": response.simulated,
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            # No price known: the cost is unknown, not zero.
            "usd": "unknown" if response.usd is None and not response.simulated else response.usd,
            "answer_path": result.answer_path,
        }
    elif description.status in (WorkflowExecutionStatus.FAILED, WorkflowExecutionStatus.CANCELED):
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            view["error"] = failure_message(exc)
    return view


def _print_ask_view(view: dict[str, Any]) -> None:
    """Plain lines, never a table cell: the answer's path is printed whole (a table cut it with
    "…" in a narrow terminal), so it can be copied."""
    for key, value in view.items():
        if value is None:
            continue
        if key == "usd" and isinstance(value, float):
            value = f"{value:.4f}"
        click.echo(f"{key.replace('_', ' '):<14} {value}")


Shown = Progress | dict[str, Any] | PlanStatus | CampaignProgress
"""What ``status`` shows: a tournament's progress, an Ask's view, a plan's or campaign's status."""


def show_status(settings: Settings, run_id: str, *, as_json: bool) -> None:
    """``ponder status`` from the server: the run's own view, by kind (``client.status_cli``
    shows an ended run from its run store when the embedded server is down)."""

    async def look(session: Session) -> tuple[Shown, Any]:
        handle = await _handle(session, run_id)
        kind = (await handle.describe()).workflow_type
        if kind == ASK:
            return await _ask_view(session, handle), None  # describe and result: no query
        async with query_answerer(session):
            if kind == PLAN_RUN:
                return await plan_status(handle), None
            if kind == CAMPAIGN:
                return await campaign_control.query_progress(handle), None
            progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
            return progress, await run_times(handle)

    async def go() -> tuple[Shown, Any]:
        # A query needs a worker: the one polling the run's queue answers it if there is one,
        # else one runs here (``query_answerer``). Only reads: retried whole through a server
        # restart, like a command that waits on a run.
        async with open_session(settings, worker=False) as session:
            return await through_restarts(lambda: look(session))

    shown, times = asyncio.run(go())
    if isinstance(shown, CampaignProgress):
        if as_json:
            click.echo(shown.model_dump_json(indent=2))
        else:
            campaign_control.print_status(shown)
        return
    if isinstance(shown, PlanStatus):
        print_plan_status(shown, as_json=as_json, settings=settings)
        return
    if isinstance(shown, dict):
        if as_json:
            click.echo(json.dumps(shown, indent=2))
        else:
            _print_ask_view(shown)
        return
    progress = shown
    if as_json:
        click.echo(json.dumps(progress.model_dump(mode="json"), indent=2))
        return
    out = Console()
    out.print(progress_table(progress, *times))
    if progress.error:
        out.print(f"error    {progress.error}")
    for refusal in progress.refused:
        out.print(f"refused  extend_budget signal: {refusal}")
    if progress.status == "awaiting_budget":
        out.print(f"continue with: {resume_command(run_id, progress)}")
    if progress.leaderboard:
        board = Table("rank", "candidate", "score", "W/L/T", title=progress.leaderboard[0].phase)
        for row in progress.leaderboard:
            board.add_row(
                str(row.rank),
                row.candidate_id,
                f"{row.score:+.3f}",
                f"{row.wins}/{row.losses}/{row.ties}",
            )
        out.print(board)


def watch_run(settings: Settings, run_id: str) -> None:
    """``ponder watch``: follow a run by its kind until it ends or pauses."""

    async def go() -> AskResult | Followed:
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            kind = (await handle.describe()).workflow_type
            if kind == PLAN_RUN:
                return await watch_plan(session, run_id)
            if kind == CAMPAIGN:
                return await campaign_control.follow(session, _as_campaign(session, handle))
            if kind == ASK:
                ask = session.client.get_workflow_handle(run_id, result_type=AskResult)
                return await wait_or_detach(session, ask)
            return await follow(session, handle)

    result = asyncio.run(go())
    if isinstance(result, PlanRunResult | PlanStatus):
        finish(result)
    if isinstance(result, CampaignResult | CampaignProgress):
        campaign_control.print_outcome(run_id, result)
        return
    if isinstance(result, AskResult):
        click.echo(result.response.text)
        return
    print_outcome(run_id, result)


def extend_run(
    settings: Settings,
    run_id: str,
    given: dict[str, str | None],
    *,
    tokens: str | None,
    wall_ms: str | None,
    returns: bool,
) -> None:
    """``ponder extend``: raise a run's limits (``given``: --calls, --usd, --input-tokens and
    --output-tokens; ``tokens``, ``wall_ms``: a plan run's); ``returns`` once they are accepted."""

    async def go() -> Followed:
        # A worker here answers the query; with --detach a background one continues the run.
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            description = await handle.describe()
            if description.status != WorkflowExecutionStatus.RUNNING:
                # Temporal would refuse the update with "workflow not found": say what it is.
                raise ConfigError(
                    "run.ended",
                    f"run {run_id} has already ended "
                    f"({state_name(description.status)}): nothing to extend",
                )
            kind = description.workflow_type
            if kind == PLAN_RUN:
                return await extend_plan_run(
                    session, handle, returns, tokens=tokens, wall_ms=wall_ms, **given
                )
            if tokens is not None or wall_ms is not None:
                flag = "--tokens" if tokens is not None else "--wall-ms"
                raise ConfigError(
                    "option.invalid",
                    f"{flag} is a plan run's limit; a {kind} run's are --calls, --usd, "
                    "--input-tokens and --output-tokens",
                )
            if kind == CAMPAIGN:
                handle = _as_campaign(session, handle)
                current = (await campaign_control.query_progress(handle)).budget
            else:
                current = (await handle.query(QUERY_PROGRESS, result_type=Progress)).budget
            await extend_budget(handle, new_limits(current, **given))
            if returns:
                if session.embedded:
                    spawn_background_worker(settings)
                click.echo(f"the run goes on: {ponder_program()} watch {run_id}", err=True)
                sys.exit(0)
            if kind == CAMPAIGN:
                return await campaign_control.follow(session, handle)
            return await follow(session, handle)

    outcome = asyncio.run(go())
    if isinstance(outcome, PlanRunResult | PlanStatus):
        finish(outcome)
    if isinstance(outcome, CampaignResult | CampaignProgress):
        campaign_control.print_outcome(run_id, outcome)
        return
    print_outcome(run_id, outcome)


def cancel_run(settings: Settings, run_id: str) -> None:
    """``ponder cancel``: cancel a running run and say how it ended."""

    async def go() -> None:
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            description = await handle.describe()
            if description.status != WorkflowExecutionStatus.RUNNING:
                # Temporal accepts a cancel of an ended run and does nothing: say so.
                state = state_name(description.status)
                click.echo(
                    f"run {run_id}: {state} (it had already ended: nothing to cancel)", err=True
                )
                return
            await handle.cancel()
            # The run ends cancelled (or finished first); either way describe() tells.
            with contextlib.suppress(Exception):
                await handle.result()
            description = await handle.describe()
            click.echo(f"run {run_id}: {state_name(description.status)}", err=True)
            partial = settings.runs_dir / run_id / "report.html"
            if description.workflow_type == CAMPAIGN and partial.is_file():
                click.echo(f"partial report: {partial}", err=True)

    asyncio.run(go())
    sys.exit(1)
