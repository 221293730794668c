"""``ponder campaign``: validate a ``ponder-campaign/1`` document, run it, read its report.

Exit codes: 0 valid / completed (or detached), 1 failed or cancelled, 2 invalid input (every
error printed, one per line: ``path: [code] message``), 75 paused awaiting budget.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from activities.config import Settings
from activities.errors import ConfigError
from activities.model_types import Usage
from activities.pricing import PRICES_AS_OF, cost_usd
from activities.providers import price_table
from client.campaign_control import follow, print_outcome, rerender_report
from client.command_settings import command_settings
from client.documents import load, route_errors
from client.runs import new_run_id, start_and_follow
from client.status_cli import status as shared_status
from client.tournament_control import extend as shared_extend
from client.validate_output import format_option, print_invalid, print_validation
from workflows.campaign.configs import cell_calls, variant_models
from workflows.campaign.document import CampaignDocument, Validation
from workflows.campaign.records import RunRecord
from workflows.campaign.stats import (
    ALPHA,
    DEFAULT_DIFF_SD,
    MIN_PAIRS_FLOOR,
    paired_power,
    pilot_diff_sd,
)
from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN
from workflows.run_ids import check_run_id
from workflows.wire_replay import WireReplay

__all__ = ["campaign"]

# A forecast cannot know token counts: this per-call shape gives a rough worst-case USD figure.
ROUGH_INPUT_TOKENS = 2_000
ROUGH_OUTPUT_TOKENS = 1_000


@click.group()
def campaign() -> None:
    """Campaigns: variants x scenarios x seeds, ending in a report that says what to promote."""


def summary(result: Validation) -> str:
    doc = result.document
    assert doc is not None
    cells = len(doc.variants) * len(doc.scenarios) * len(doc.seeds)
    calls = sum(cell_calls(v, s) for v in doc.variants for s in doc.scenarios) * len(doc.seeds)
    return (
        f"valid campaign {doc.campaign_id!r}: {len(doc.variants)} variants x "
        f"{len(doc.scenarios)} scenarios x {len(doc.seeds)} seeds = {cells} cells, "
        f"worst case {calls} model calls; comparator {doc.comparator_id}, split {doc.split}"
    )


@campaign.command()
@click.argument("file")
@format_option
@click.pass_context
def validate(ctx: click.Context, file: str, fmt: str) -> None:
    """Validate FILE (JSON or YAML; - reads stdin), its route included, without running anything.

    Prints every error as `path: [code] message`; exit 2 when invalid, 0 when valid.
    """
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


def _pilot_records(pilot: str, settings: Settings) -> list[RunRecord]:
    path = Path(pilot)
    if not path.is_file():
        path = settings.runs_dir / check_run_id(pilot) / "records.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(
            "file.unreadable", f"cannot read the pilot's records {path}: {exc.strerror}"
        ) from None
    return [RunRecord.model_validate_json(line) for line in lines if line.strip()]


def forecast(
    doc: CampaignDocument, settings: Settings, *, effect: float, pilot: str | None
) -> None:
    """Print the cells, the worst case in calls and USD, and the power at the planned pairs."""
    usage = Usage(input_tokens=ROUGH_INPUT_TOKENS, output_tokens=ROUGH_OUTPUT_TOKENS)
    models = variant_models(doc)
    prices = price_table([m for _, m, _ in models], settings, require_key=False)
    click.echo(
        f"campaign {doc.campaign_id!r}: {len(doc.variants)} variants x {len(doc.scenarios)} "
        f"scenarios x {len(doc.seeds)} seeds = "
        f"{len(doc.variants) * len(doc.scenarios) * len(doc.seeds)} cells, "
        f"at most {doc.concurrency} at once"
    )
    total_calls, total_usd, unpriced = 0, 0.0, set()
    for variant in doc.variants:
        calls = sum(cell_calls(variant, s) for s in doc.scenarios) * len(doc.seeds)
        specs = [m for v, m, _ in models if v == variant.id]
        missing = {m for m in specs if m not in prices}
        per_call = max((cost_usd(prices[m], usage) for m in specs if m in prices), default=0.0)
        unpriced |= missing
        total_calls += calls
        total_usd += calls * per_call
        usd = "unknown" if missing else f"{calls * per_call:.4f}"
        click.echo(f"  {variant.id:<20} {variant.kind:<10} worst case {calls:>6} calls, USD {usd}")
    usd_total = f"{total_usd:.4f}" + (
        f" + unpriced {', '.join(sorted(unpriced))}" if unpriced else ""
    )
    click.echo(
        f"worst case: {total_calls} calls, USD {usd_total} (at ~{ROUGH_INPUT_TOKENS} in / "
        f"{ROUGH_OUTPUT_TOKENS} out tokens a call; prices as of {PRICES_AS_OF}, ponder.toml wins)"
    )
    pairs = len(doc.scenarios) * len(doc.seeds)
    sd, source = DEFAULT_DIFF_SD, f"the stated default {DEFAULT_DIFF_SD}"
    if pilot is not None:
        measured = pilot_diff_sd(_pilot_records(pilot, settings), doc.comparator_id)
        if measured is not None:
            sd, source = measured, f"pilot {pilot}"
    power = paired_power(effect, sd, pairs)
    needed = next((n for n in range(2, 100_000) if paired_power(effect, sd, n) >= 0.8), None)
    floor = max(MIN_PAIRS_FLOOR, doc.min_pairs)
    click.echo(
        f"power: {pairs} pairs per variant against {doc.comparator_id}, SD of paired "
        f"differences {sd:.4g} ({source}): {power:.0%} to detect an effect of {effect:g} "
        f"(alpha {ALPHA}); 80% needs {needed or 'over 100000'} pairs; a decision needs "
        f">= {floor} pairs"
    )


@campaign.command()
@click.argument("run_id")
@click.option("--html", is_flag=True, help="Print the path of report.html instead of markdown.")
@click.pass_context
def report(ctx: click.Context, run_id: str, html: bool) -> None:
    """Re-render a campaign's report from its records.jsonl and print it (markdown).

    The same records give the same bytes, so the rewritten files equal the campaign's own.
    """
    run_dir, files = rerender_report(command_settings(ctx), run_id)
    click.echo(str(run_dir / "report.html") if html else files["report.md"], nl=False)


# The shared commands, also under ``ponder campaign`` where a campaign user looks for them.
campaign.add_command(shared_status, name="status")
campaign.add_command(shared_extend, name="extend")
