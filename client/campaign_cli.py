"""``ponder campaign``: validate a ``ponder-campaign/1`` document, run it, read its report.

Exit codes: 0 valid / completed (or detached), 1 failed or cancelled, 2 invalid input (every
error printed, one per line: ``path: [code] message``), 75 paused awaiting budget. What runs a
command (documents, statistics, the SDK) is imported in its body, so ``--help`` answers at once.
"""

from __future__ import annotations

import asyncio

import click

from client.command_settings import command_settings
from client.ledger_cli import ledger_option
from client.status_cli import status as shared_status
from client.tournament_control import extend as shared_extend
from client.validate_output import format_option
from workflows.names import CAMPAIGN
from workflows.run_ids import check_run_id

__all__ = ["campaign"]


@click.group()
def campaign() -> None:
    """Campaigns: variants x scenarios x seeds, ending in a report that says what to promote."""


@campaign.command()
@click.argument("file")
@format_option
@click.pass_context
def validate(ctx: click.Context, file: str, fmt: str) -> None:
    """Validate FILE (JSON or YAML; - reads stdin), its route included, without running anything.

    Prints every error as `path: [code] message`; exit 2 when invalid, 0 when valid.
    """
    from client.campaign_forecast import summary
    from client.documents import load, route_errors
    from client.validate_output import print_validation

    settings = command_settings(ctx)
    result = load(file, settings)
    if result.ok and result.document is not None:
        # The route first, as the run's preflight refuses it before anything else runs.
        result.errors = route_errors(result.document, settings) + result.errors
    print_validation(
        file,
        fmt,
        result.ok,
        result.errors,
        summary=lambda: summary(result),
        totals=lambda: summary(result),
    )


@campaign.command()
@click.argument("file")
@click.option("--run-id", default=None, help="Workflow id (default: campaign-<random>).")
@click.option("--detach", is_flag=True, help="Start the campaign, print its id and return.")
@click.option(
    "--dry-run", is_flag=True, help="Forecast (cells, worst-case calls and USD, power); no run."
)
@click.option(
    "--effect", type=float, default=0.05, show_default=True, help="Effect size for the power."
)
@click.option(
    "--pilot", default=None, help="A pilot campaign's run id or records.jsonl: its SD of pairs."
)
@click.option(
    "--replay",
    "replay_of",
    default=None,
    metavar="CAMPAIGN_RUN_ID",
    help="Answer every model call from that recorded campaign's raw events (wire replay).",
)
@click.option(
    "--on-miss",
    type=click.Choice(["throw", "fail-closed", "network"]),
    default="throw",
    show_default=True,
    help="With --replay: a call the recording lacks fails, gets a synthetic 599, or goes out.",
)
@ledger_option
@click.pass_context
def run(
    ctx: click.Context,
    file: str,
    run_id: str | None,
    detach: bool,
    dry_run: bool,
    effect: float,
    pilot: str | None,
    replay_of: str | None,
    on_miss: str,
) -> None:
    """Run the campaign in FILE: live progress (cells, spend, leader), then the decision.

    Exit 0 completed (or detached), 1 failed or cancelled, 2 invalid, 75 paused on its budget.
    """
    from client.campaign_control import follow, print_outcome
    from client.campaign_forecast import forecast
    from client.documents import load
    from client.runs import new_run_id, start_and_follow
    from client.validate_output import print_invalid
    from workflows.campaign.types import CampaignResult
    from workflows.wire_replay import WireReplay

    settings = command_settings(ctx)
    result = load(file, settings)
    if not result.ok or result.document is None:
        print_invalid(file, result.errors)
    if dry_run:
        forecast(result.document, settings, effect=effect, pilot=pilot)
        return
    run_id = check_run_id(run_id or new_run_id("campaign"))
    if replay_of is not None:  # the input's calls.replay: every worker routes the same way
        if replay_of == run_id:
            raise click.UsageError("--replay names the recorded campaign: give another --run-id")
        result.document.calls.replay = WireReplay.model_validate(
            {"run_id": check_run_id(replay_of), "on_miss": on_miss}
        )
        click.echo(f"campaign {run_id} replays {replay_of} (on a miss: {on_miss})", err=True)
    payload = result.document.model_dump(mode="json", by_alias=True)

    started = start_and_follow(
        settings, CAMPAIGN, payload, run_id, CampaignResult, follow, detach=detach
    )
    print_outcome(run_id, asyncio.run(started))


@campaign.command()
@click.argument("run_id")
@click.option("--html", is_flag=True, help="Print the path of report.html instead of markdown.")
@click.pass_context
def report(ctx: click.Context, run_id: str, html: bool) -> None:
    """Re-render a campaign's report from its records.jsonl and print it (markdown).

    The same records give the same bytes, so the rewritten files equal the campaign's own.
    """
    from client.campaign_report import rerender_report

    run_dir, files = rerender_report(command_settings(ctx), run_id)
    click.echo(str(run_dir / "report.html") if html else files["report.md"], nl=False)


# The shared commands, also under ``ponder campaign`` where a campaign user looks for them.
campaign.add_command(shared_status, name="status")
campaign.add_command(shared_extend, name="extend")
