"""Following a tournament: the live progress table, the pause hand-off and the outcome lines."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from client.hints import ponder_program
from client.live import live_panel
from client.runs import RunFailed, ctrl_c_detaches, detach, run_result
from client.session import Session
from workflows.budget import BudgetLimits
from workflows.names import QUERY_PROGRESS
from workflows.tournament.types import Progress, TournamentResult

__all__ = [
    "EXIT_PAUSED",
    "console",
    "follow",
    "format_limits",
    "print_outcome",
    "print_progress",
    "progress_table",
    "resume_command",
    "run_times",
]

EXIT_PAUSED = 75
console = Console(stderr=True)


def format_limits(limits: BudgetLimits) -> str:
    """``max_calls=16, max_usd=5.00``; ``none`` when no limit is set."""
    parts = []
    for name, value in limits.model_dump(exclude_none=True).items():
        parts.append(f"{name}={value:.2f}" if isinstance(value, float) else f"{name}={value}")
    return ", ".join(parts) or "none"


async def run_times(handle: WorkflowHandle) -> tuple[datetime | None, datetime | None]:
    """When the run started and (if it has) ended, from the server: the same for every viewer."""
    description = await handle.describe()
    return description.start_time, description.close_time


def _elapsed(started: datetime | None, ended: datetime | None) -> str | None:
    if started is None:
        return None
    seconds = ((ended or datetime.now(UTC)) - started).total_seconds()
    return f"{max(seconds, 0.0):.1f}s"


_WAITING = {
    "provider.session_gone": "provider.session_gone: no MCP session serves its mcp: calls; "
    "connect one (ponder mcp with a host that allows sampling) and they go on",
}


def progress_table(
    p: Progress, started: datetime | None = None, ended: datetime | None = None
) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    limit = p.budget.max_calls if p.budget.max_calls is not None else p.calls_planned
    table.add_row("run", p.run_id)
    # The limit that stopped the run matters only while it is paused on it.
    paused_on = f" ({p.blocking_limit})" if p.status == "awaiting_budget" else ""
    table.add_row("status", p.status + paused_on)
    if p.waiting_until:  # a provider asked to come back later: the run goes on by itself then
        table.add_row("resumes", p.waiting_until)
    if p.waiting_code:
        table.add_row("waiting", _WAITING.get(p.waiting_code, p.waiting_code))
    table.add_row("phase", p.phase)
    table.add_row("calls", f"{p.spent.calls} / {limit}")
    table.add_row("tokens", f"{p.spent.input_tokens} in, {p.spent.output_tokens} out")
    if not p.usd_known:  # a sum that leaves out unpriced calls would pass for the cost
        table.add_row("usd", "unknown (a model in use has no price; see ponder.toml)")
    elif p.spent.usd:
        table.add_row("usd", f"{p.spent.usd:.4f}")
    table.add_row("limits", format_limits(p.budget))
    elapsed = _elapsed(started, ended)
    if elapsed is not None:
        table.add_row("elapsed", elapsed)
    if p.leaderboard:
        leader = p.leaderboard[0]
        table.add_row("leader", f"{leader.candidate_id} (score {leader.score:+.2f})")
    return table


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


def resume_command(run_id: str, paused: Progress) -> str:
    """The exact ``ponder extend`` that lets a paused run go on past its blocking limit."""
    spent = paused.spent
    if paused.blocking_limit == "max_usd":
        return f"{ponder_program()} extend {run_id} --usd +{max(spent.usd, 0.01):.2f}"
    if paused.blocking_limit == "max_input_tokens":
        return f"{ponder_program()} extend {run_id} --input-tokens +{max(spent.input_tokens, 1)}"
    if paused.blocking_limit == "max_output_tokens":
        return f"{ponder_program()} extend {run_id} --output-tokens +{max(spent.output_tokens, 1)}"
    # The nominal calls left, plus a tenth for invalid-output retries.
    more = max(paused.calls_planned - spent.calls, 0) + max(paused.calls_planned // 10, 1)
    return f"{ponder_program()} extend {run_id} --calls +{more}"


def print_progress(
    run_id: str, progress: Progress, started: datetime | None, ended: datetime | None
) -> None:
    """``ponder status`` of a tournament: the progress table, its error and refused signals,
    how to continue a paused run, and the leaderboard."""
    out = Console()
    out.print(progress_table(progress, started, ended))
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


def print_outcome(run_id: str, result: TournamentResult | Progress) -> None:
    """The final answer on stdout, the winner and report path on stderr; exit 75 if paused."""
    if isinstance(result, Progress):
        click.echo(
            f"run {run_id} is paused awaiting budget ({result.blocking_limit} reached); "
            f"continue it with: {resume_command(run_id, result)}",
            err=True,
        )
        sys.exit(EXIT_PAUSED)
    run_dir = Path(result.run_dir)
    click.echo(result.final_answer)
    click.echo(f"winner: {result.winner_id} after {result.spent.calls} calls", err=True)
    try:  # the run directory is the worker's; a remote worker's may not be visible here
        summary = json.loads((run_dir / "summary.json").read_text())
    except OSError:
        summary = {}
    if summary.get("simulated"):
        click.echo(
            f"simulated: winner true quality {summary['winner_true_quality']:.3f}, best "
            f"candidate {summary['best_candidate_id']} {summary['best_true_quality']:.3f}",
            err=True,
        )
    confidence = summary.get("confidence") or {}
    if confidence.get("resamples") and "winner_separated" in confidence:
        separated = "separates it from" if confidence["winner_separated"] else "overlaps"
        click.echo(
            f"confidence: the winner's 95% interval {separated} runner-up "
            f"{confidence['runner_up_id']}'s (tops {100 * confidence['winner_top_share']:.0f}% "
            f"of {confidence['resamples']} resamples)",
            err=True,
        )
    bias = (summary.get("judge") or {}).get("position_bias") or {}
    if bias.get("significant"):
        click.echo(
            f"judge: favours the {'first' if bias['estimate'] > 0 else 'second'}-shown "
            f"candidate (position bias {bias['estimate']:+.2f}, 95% CI {bias['low']:+.2f} to "
            f"{bias['high']:+.2f})",
            err=True,
        )
    click.echo(f"report: {run_dir / 'report.html'}", err=True)
