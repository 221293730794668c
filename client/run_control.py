"""What the commands on an existing run do: ``watch``, ``extend``, ``cancel`` (``status``'s
server half is ``client.status_query``). ``client.tournament_control`` declares them and imports
this module only when one runs, so their ``--help`` loads no Temporal SDK.

Each works on a tournament; ``watch`` also follows an Ask run; a plan run and a campaign get all
of them (dispatch on the workflow type).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable

import click
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle

from activities.config import Settings
from activities.errors import ConfigError
from client.hints import ponder_program
from client.run_list import run_ended, state_name
from client.session import Session, open_session, query_answerer, spawn_background_worker
from workflows.names import ASK, CAMPAIGN, PLAN_RUN, QUERY_PROGRESS
from workflows.run_ids import check_run_id

# Each kind's follow code (and its types: a campaign's pull in the plan validator) is imported
# once the run's kind is known, so a command on one kind loads none of the others'.

__all__ = ["cancel_run", "extend_run", "watch_run"]


async def _handle(session: Session, run_id: str) -> WorkflowHandle:
    from workflows.tournament.types import TournamentResult

    return session.client.get_workflow_handle(check_run_id(run_id), result_type=TournamentResult)


def _as_campaign(session: Session, handle: WorkflowHandle) -> WorkflowHandle:
    from workflows.campaign.types import CampaignResult

    return session.client.get_workflow_handle(handle.id, result_type=CampaignResult)


def watch_run(settings: Settings, run_id: str) -> None:
    """``ponder watch``: follow a run by its kind until it ends or pauses."""

    async def go() -> Callable[[], None]:
        async with open_session(settings, run=check_run_id(run_id)) as session:
            handle = await _handle(session, run_id)
            kind = (await handle.describe()).workflow_type
            if kind == PLAN_RUN:
                from client.plan_follow import finish, watch_plan

                plan_outcome = await watch_plan(session, run_id)
                return lambda: finish(plan_outcome)
            if kind == CAMPAIGN:
                from client import campaign_control

                campaign = _as_campaign(session, handle)
                campaign_outcome = await campaign_control.follow(session, campaign)
                return lambda: campaign_control.print_outcome(run_id, campaign_outcome)
            if kind == ASK:
                from client.call_progress import retries_shown, to_stderr
                from client.runs import wait_or_detach
                from workflows.ask_types import AskResult

                ask = session.client.get_workflow_handle(run_id, result_type=AskResult)
                async with retries_shown(ask, to_stderr, client=session.client):
                    answer = (await wait_or_detach(session, ask)).response.text
                return lambda: click.echo(answer)
            return await _follow_tournament(session, handle, run_id)

    asyncio.run(go())()


async def _follow_tournament(
    session: Session, handle: WorkflowHandle, run_id: str
) -> Callable[[], None]:
    from client.tournament_follow import follow, print_outcome

    outcome = await follow(session, handle)
    return lambda: print_outcome(run_id, outcome)


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

    async def go() -> Callable[[], None]:
        # Following, the worker here runs the resumed run. With --detach none runs here past the
        # reads: a worker that took the resumed run's calls and then exited with the command
        # would leave them to time out (30 s) before another took them.
        async with open_session(settings, worker=not returns, run=check_run_id(run_id)) as session:
            handle = await _handle(session, run_id)
            description = await handle.describe()
            if description.status != WorkflowExecutionStatus.RUNNING:
                # Temporal would refuse the update with "workflow not found": say what it is.
                raise run_ended(run_id, state_name(description.status), "extend")
            kind = description.workflow_type
            if kind == PLAN_RUN:
                from client.plan_follow import extend_plan_run, finish

                plan_outcome = await extend_plan_run(
                    session, handle, returns, tokens=tokens, wall_ms=wall_ms, **given
                )
                return lambda: finish(plan_outcome)
            if tokens is not None or wall_ms is not None:
                flag = "--tokens" if tokens is not None else "--wall-ms"
                raise ConfigError(
                    "option.invalid",
                    f"{flag} is a plan run's limit; a {kind} run's are --calls, --usd, "
                    "--input-tokens and --output-tokens",
                )
            from client.budget_extend import extend_budget, new_limits
            from workflows.tournament.types import Progress

            async with query_answerer(session) if returns else contextlib.nullcontext():
                if kind == CAMPAIGN:
                    from client import campaign_control

                    handle = _as_campaign(session, handle)
                    current = (await campaign_control.query_progress(handle)).budget
                else:
                    current = (await handle.query(QUERY_PROGRESS, result_type=Progress)).budget
            if returns and session.embedded:
                spawn_background_worker(settings)  # before the update: it takes the run on
            await extend_budget(handle, new_limits(current, **given))
            if returns:
                click.echo(f"the run goes on: {ponder_program()} watch {run_id}", err=True)
                sys.exit(0)
            if kind == CAMPAIGN:
                campaign_outcome = await campaign_control.follow(session, handle)
                return lambda: campaign_control.print_outcome(run_id, campaign_outcome)
            return await _follow_tournament(session, handle, run_id)

    asyncio.run(go())()


def cancel_run(settings: Settings, run_id: str) -> None:
    """``ponder cancel``: cancel a running run and say how it ended. The exit code is the
    run's, as everywhere: 1 cancelled or failed, 0 when it completed (it had ended, or the
    cancel came once its work was done: ``workflows/completion.py``)."""

    async def go() -> WorkflowExecutionStatus | None:
        async with open_session(settings, run=check_run_id(run_id)) as session:
            handle = await _handle(session, run_id)
            description = await handle.describe()
            if description.status != WorkflowExecutionStatus.RUNNING:
                # Temporal accepts a cancel of an ended run and does nothing: say so.
                state = state_name(description.status)
                click.echo(
                    f"run {run_id}: {state} (it had already ended: nothing to cancel)", err=True
                )
                return description.status
            await handle.cancel()
            # The run ends cancelled (or finished first); either way describe() tells.
            with contextlib.suppress(Exception):
                await handle.result()
            description = await handle.describe()
            too_late = description.status == WorkflowExecutionStatus.COMPLETED
            click.echo(
                f"run {run_id}: {state_name(description.status)}"
                + (" (the cancel came once its work was done)" if too_late else ""),
                err=True,
            )
            partial = settings.runs_dir / run_id / "report.html"
            if description.workflow_type == CAMPAIGN and partial.is_file():
                click.echo(f"partial report: {partial}", err=True)
            return description.status

    ended = asyncio.run(go())
    sys.exit(0 if ended == WorkflowExecutionStatus.COMPLETED else 1)
