"""How a followed tournament ends on the terminal: the final answer on stdout, the winner and
report lines on stderr, or the paused line and exit 75. No SDK import: a run followed over the
server's HTTP API (``client.think_http``) ends with the same lines as one followed through it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from client.exit_codes import EXIT_PAUSED
from client.tournament_display import resume_command
from workflows.tournament.types import Progress, TournamentResult

__all__ = ["print_outcome"]


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
        from activities.run_file_crypto import read_run_text

        summary = json.loads(read_run_text(run_dir / "summary.json"))
    except OSError:
        summary = {}
    if summary.get("simulated"):
        click.echo(
            f"simulated: winner true quality {summary['winner_true_quality']:.3f}, best "
            f"candidate {summary['best_candidate_id']} {summary['best_true_quality']:.3f}",
            err=True,
        )
    confidence = summary.get("confidence") or {}
    if confidence.get("intervals_valid") is False:
        click.echo(f"confidence: {confidence['note']}", err=True)
    elif confidence.get("resamples") and "winner_separated" in confidence:
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
