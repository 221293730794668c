"""A campaign that already exists: follow its progress, show its status, re-render its report.

Used by ``ponder campaign run|status|report`` and by the shared ``ponder status | watch | extend |
report ID`` when the run is a ``Campaign`` (they dispatch on the workflow type).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

import click
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from client.call_progress import retries_shown, to_stderr
from client.campaign_display import progress_line, resume_command
from client.campaign_report import rerender_report
from client.exit_codes import EXIT_PAUSED
from client.runs import (
    RunFailed,
    ctrl_c_detaches,
    detach,
    run_result,
)
from client.session import Session
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import QUERY_PROGRESS

__all__ = [
    "EXIT_PAUSED",
    "follow",
    "print_outcome",
    "query_progress",
    "rerender_report",
]


async def query_progress(handle: WorkflowHandle) -> CampaignProgress:
    progress: CampaignProgress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
    return progress


async def follow(session: Session, handle: WorkflowHandle) -> CampaignResult | CampaignProgress:
    """Print progress whenever it changes until the campaign ends or pauses on its budget.

    Ctrl-C detaches: the campaign goes on (with a background worker in embedded mode).
    """
    # A failed call attempt of a cell (a refused connection, a 503) shows as it happens.
    async with retries_shown(handle, to_stderr, client=session.client):
        return await _follow(session, handle)


async def _follow(session: Session, handle: WorkflowHandle) -> CampaignResult | CampaignProgress:
    result = asyncio.ensure_future(run_result(handle))
    shown = ""
    with ctrl_c_detaches() as interrupted:
        while not result.done():
            if interrupted.is_set():
                result.cancel()
                detach(session, handle.id)
            progress = None
            with contextlib.suppress(RPCError):
                progress = await query_progress(handle)
            if progress is not None:
                line = progress_line(progress)
                if line != shown:
                    click.echo(line, err=True)
                    shown = line
                if progress.status == "awaiting_budget" and progress.cells_running == 0:
                    result.cancel()
                    return progress
            await asyncio.wait({result}, timeout=0.5)
    with contextlib.suppress(RPCError):  # the final state, once
        final = progress_line(await query_progress(handle))
        if final != shown:
            click.echo(final, err=True)
    try:
        return result.result()
    except WorkflowFailureError as exc:
        raise RunFailed.of(handle.id, exc, what="campaign") from exc


def print_outcome(run_id: str, outcome: CampaignResult | CampaignProgress) -> None:
    """The recommendation and decisions on stdout, the report path on stderr; 75 if paused."""
    if isinstance(outcome, CampaignProgress):
        click.echo(
            f"campaign {run_id} paused: {outcome.blocking_limit} reached; continue with: "
            f"{resume_command(run_id, outcome)}",
            err=True,
        )
        sys.exit(EXIT_PAUSED)
    click.echo(f"recommendation: {outcome.recommendation}")
    for variant, decision in outcome.decisions.items():
        click.echo(f"  {variant}: {decision}")
    click.echo(
        f"-- campaign {run_id}: {outcome.cells} cells ({outcome.failed_cells} failed), "
        f"{outcome.spent.calls} calls; report in {Path(outcome.run_dir) / 'report.html'}",
        err=True,
    )
