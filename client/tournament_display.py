"""How ``ponder status`` and ``think`` show a tournament's progress: its table, the command that
continues a paused run, the leaderboard.

No SDK import: ``status`` of a live run reads it over the server's HTTP API
(``client.status_http``) and should answer at once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click
from rich.table import Table

from client.consoles import text_console
from client.hints import ledger_extend, ponder_program
from workflows.budget import BudgetLimits
from workflows.tournament.progress import Progress

__all__ = [
    "format_limits",
    "print_progress",
    "print_progress_json",
    "progress_table",
    "resume_command",
]


def format_limits(limits: BudgetLimits) -> str:
    """``max_calls=16, max_usd=5.00``; ``none`` when no limit is set."""
    parts = []
    for name, value in limits.model_dump(exclude_none=True).items():
        parts.append(f"{name}={value:.2f}" if isinstance(value, float) else f"{name}={value}")
    return ", ".join(parts) or "none"


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


def resume_command(run_id: str, paused: Progress) -> str:
    """The exact ``ponder extend`` that lets a paused run go on past its blocking limit (or the
    ``ponder ledger extend`` of the shared ledger it waits for)."""
    if (command := ledger_extend(paused.blocking_limit)) is not None:
        return command
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


def print_progress_json(progress: Progress) -> None:
    """``ponder status --json`` of a tournament: the progress query as it came."""
    click.echo(json.dumps(progress.model_dump(mode="json"), indent=2))


def print_progress(
    run_id: str, progress: Progress, started: datetime | None, ended: datetime | None
) -> None:
    """``ponder status`` of a tournament: the progress table, its error and refused signals,
    how to continue a paused run, and the leaderboard."""
    out = text_console()
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
