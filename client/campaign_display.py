"""How ``ponder status`` and ``campaign run`` show a campaign's progress: one line, its limits, and
the command that continues a campaign awaiting its budget.

No SDK import: ``status`` of a live run reads it over the server's HTTP API
(``client.status_http``) and should answer at once.
"""

from __future__ import annotations

import click

from client.hints import ledger_extend, ponder_program
from client.tournament_display import format_limits
from workflows.campaign.progress import CampaignProgress

__all__ = ["print_status", "progress_line", "resume_command"]


def progress_line(p: CampaignProgress) -> str:
    leader = (
        f", leader {p.leader} ({p.leader_mean:.3f})"
        if p.leader and p.leader_mean is not None
        else ""
    )
    usd = f", {p.spent.usd:.4f} USD" if p.spent.usd else ""
    extend = _ledger_extend(p)
    waits = f"; waiting for {p.blocking_limit}: {extend}" if extend else ""
    return (
        f"[{p.status}] cells {p.cells_done}/{p.cells_total} done, {p.cells_running} running, "
        f"{p.cells_failed} failed; {p.spent.calls} calls{usd}{leader}{waits}"
    )


def _ledger_extend(p: CampaignProgress) -> str | None:
    """The ``ponder ledger extend`` of the shared ledger a judge call waits for."""
    return ledger_extend(p.blocking_limit) if p.status == "awaiting_budget" else None


def resume_command(run_id: str, paused: CampaignProgress) -> str:
    """The ``ponder extend`` that lets a campaign awaiting its budget start its next cells (or
    the ``ponder ledger extend`` that lets its judge call go on)."""
    if (extend := _ledger_extend(paused)) is not None:
        return extend
    if paused.blocking_limit == "max_usd":
        return f"{ponder_program()} extend {run_id} --usd +{max(paused.spent.usd, 0.01):.2f}"
    if paused.blocking_limit in ("max_input_tokens", "max_output_tokens"):
        flag = paused.blocking_limit.removeprefix("max_").replace("_", "-")
        spent = getattr(paused.spent, paused.blocking_limit.removeprefix("max_"))
        return f"{ponder_program()} extend {run_id} --{flag} +{max(spent, 1)}"
    # Enough for every cell left at the waiting cell's worst case (a limit, not a spend).
    left = max(paused.cells_total - paused.cells_done, 1)
    return f"{ponder_program()} extend {run_id} --calls +{left * (paused.awaiting_cell_calls or 1)}"


def print_status(progress: CampaignProgress, *, as_json: bool = False) -> None:
    """``ponder status`` of a campaign: its progress line, limits, error and refused signals, and
    how to continue it when it awaits its budget; or the progress query as JSON."""
    if as_json:
        click.echo(progress.model_dump_json(indent=2))
        return
    click.echo(progress_line(progress))
    click.echo(f"limits {format_limits(progress.budget)}; fingerprint {progress.fingerprint}")
    if progress.error:
        click.echo(f"error: {progress.error}")
    for refusal in progress.refused:
        click.echo(f"refused: extend_budget signal: {refusal}")
    if progress.status == "awaiting_budget":
        click.echo(
            f"awaiting budget ({progress.blocking_limit}); continue with: "
            f"{resume_command(progress.run_id, progress)}"
        )
