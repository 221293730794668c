"""``ponder campaign``: validate a ``ponder-campaign/1`` document, run it, read its report.

Exit codes: 0 valid / completed (or detached), 1 failed or cancelled, 2 invalid input (every
error printed, one per line: ``path: [code] message``), 75 paused awaiting budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path

import click
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError

from activities.campaign.report import ReportDesign, render_report
from activities.config import Settings, load_settings
from activities.errors import ConfigError
from activities.model_types import Usage
from activities.pricing import PRICES_AS_OF, cost_usd
from activities.providers import default_model_for, price_table
from client.profiles import expand_saved_profiles
from client.runs import (
    RunFailed,
    check_run_id,
    ctrl_c_detaches,
    detach,
    failure_message,
    new_run_id,
    run_result,
    start_run,
)
from client.session import Session, open_session, spawn_background_worker
from workflows.campaign.configs import cell_calls, config_errors, variant_models
from workflows.campaign.document import CampaignDocument, Validation, validate_value
from workflows.campaign.errors import CampaignError
from workflows.campaign.records import RunRecord
from workflows.campaign.stats import (
    ALPHA,
    DEFAULT_DIFF_SD,
    MIN_PAIRS_FLOOR,
    paired_power,
    pilot_diff_sd,
)
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import CAMPAIGN, QUERY_PROGRESS, UPDATE_EXTEND_BUDGET
from workflows.plan.document import parse_text
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult
from workflows.wire_replay import WireReplay

__all__ = ["campaign", "load"]

EXIT_INVALID = 2
EXIT_PAUSED = 75
# A forecast cannot know token counts: this per-call shape gives a rough worst-case USD figure.
ROUGH_INPUT_TOKENS = 2_000
ROUGH_OUTPUT_TOKENS = 1_000


@click.group()
def campaign() -> None:
    """Campaigns: variants x scenarios x seeds, ending in a report that says what to promote."""


def load(file: str, settings: Settings | None = None) -> Validation:
    """The document in FILE (``-`` reads stdin), plan paths inlined, saved profiles expanded,
    validated as the workflow will validate it."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Validation(None, [_unreadable("", file, exc)])
    value, problems = parse_text(text, filename=None if file == "-" else file)
    if problems:
        return Validation(None, [CampaignError(p.code, p.path, p.message) for p in problems])
    base = Path.cwd() if file == "-" else Path(file).resolve().parent
    errors = _inline_plans(value, base)
    settings = settings or load_settings()
    errors += [
        CampaignError("variant.config", path, str(exc))
        for path, exc in expand_saved_profiles(
            value, settings.home, lambda p: default_model_for(p, settings)
        )
    ]
    if errors:
        return Validation(None, errors)
    result = validate_value(value)
    if result.document is not None and not result.errors:
        result.errors += config_errors(result.document)
    return result


def _unreadable(path: str, file: str | Path, exc: Exception) -> CampaignError:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return CampaignError("document.unreadable", path, f"cannot read {file}: {reason}")


def _inline_plans(value: object, base: Path) -> list[CampaignError]:
    """Replace each plan variant's ``plan: PATH`` by the parsed document (client side: the
    worker never reads a file a campaign names)."""
    variants = value.get("variants") if isinstance(value, dict) else None
    errors: list[CampaignError] = []
    for i, variant in enumerate(variants if isinstance(variants, list) else []):
        config = variant.get("config") if isinstance(variant, dict) else None
        if variant.get("kind") != "plan" or not isinstance(config, dict):
            continue
        source = config.get("plan")
        if not isinstance(source, str):
            continue
        path = base / source
        where = f"variants[{i}].config.plan"
        try:
            plan_text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(_unreadable(where, path, exc))
            continue
        plan, problems = parse_text(plan_text, filename=str(path))
        errors += [CampaignError(p.code, f"{where}.{p.path}", p.message) for p in problems]
        config["plan"] = plan
    return errors


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


def fail_invalid(file: str, result: Validation) -> None:
    for error in result.errors:
        click.echo(f"{file}: {error.line()}", err=True)
    click.echo(f"{file}: invalid, {len(result.errors)} error(s)", err=True)
    # sys.exit, not ctx.exit: ponder runs click with standalone_mode=False.
    sys.exit(EXIT_INVALID)


@campaign.command()
@click.argument("file")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one object with validity and every error.",
)
@click.pass_context
def validate(ctx: click.Context, file: str, fmt: str) -> None:
    """Validate FILE (JSON or YAML; - reads stdin) without running anything.

    Prints every error as `path: [code] message`; exit 2 when invalid, 0 when valid.
    """
    result = load(file, _settings(ctx))
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "file": file,
                    "valid": result.ok,
                    "errors": [e.as_dict() for e in result.errors],
                    "summary": summary(result) if result.ok else None,
                },
                indent=2,
            )
        )
        if not result.ok:
            sys.exit(EXIT_INVALID)
    elif result.ok:
        click.echo(f"{file}: {summary(result)}")
    else:
        fail_invalid(file, result)


def _settings(ctx: click.Context) -> Settings:
    root = ctx.find_root().obj or {}
    return load_settings(root.get("config"))


def progress_line(p: CampaignProgress) -> str:
    leader = (
        f", leader {p.leader} ({p.leader_mean:.3f})"
        if p.leader and p.leader_mean is not None
        else ""
    )
    usd = f", {p.spent.usd:.4f} USD" if p.spent.usd else ""
    return (
        f"[{p.status}] cells {p.cells_done}/{p.cells_total} done, {p.cells_running} running, "
        f"{p.cells_failed} failed; {p.spent.calls} calls{usd}{leader}"
    )


async def follow(session: Session, handle: WorkflowHandle) -> CampaignResult | CampaignProgress:
    """Print progress whenever it changes until the campaign ends or pauses on its budget.

    Ctrl-C detaches: the campaign goes on (with a background worker in embedded mode).
    """
    result = asyncio.ensure_future(run_result(handle))
    shown = ""
    with ctrl_c_detaches() as interrupted:
        while not result.done():
            if interrupted.is_set():
                result.cancel()
                detach(session, handle.id)
            progress = None
            with contextlib.suppress(RPCError):
                progress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
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
        final = progress_line(await handle.query(QUERY_PROGRESS, result_type=CampaignProgress))
        if final != shown:
            click.echo(final, err=True)
    try:
        return result.result()
    except WorkflowFailureError as exc:
        raise RunFailed(f"campaign {handle.id} ended: {failure_message(exc)}") from exc


def print_outcome(run_id: str, outcome: CampaignResult | CampaignProgress) -> None:
    if isinstance(outcome, CampaignProgress):
        click.echo(
            f"campaign {run_id} paused: {outcome.blocking_limit} reached; raise it with "
            f"`ponder extend {run_id} --calls N` (or --usd X)",
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
    return None


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
    settings = _settings(ctx)
    result = load(file, settings)
    if not result.ok or result.document is None:
        fail_invalid(file, result)
        return
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
    payload = result.document.model_dump(mode="json", by_alias=True)

    async def go() -> CampaignResult | CampaignProgress:
        async with open_session(settings, worker=not detach) as session:
            handle = await start_run(session, CAMPAIGN, payload, run_id, CampaignResult)
            if detach:
                if session.embedded:
                    spawn_background_worker(settings)
                click.echo(run_id)
                sys.exit(0)
            return await follow(session, handle)

    print_outcome(run_id, asyncio.run(go()))


def _pilot_records(pilot: str, settings: Settings) -> list[RunRecord]:
    path = Path(pilot)
    if not path.is_file():
        path = settings.runs_dir / check_run_id(pilot) / "records.jsonl"
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the pilot's records {path}: {exc.strerror}") from None
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
    settings = _settings(ctx)
    run_dir = settings.runs_dir / check_run_id(run_id)
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
        document = json.loads((run_dir / "campaign.json").read_text())
        lines = (run_dir / "records.jsonl").read_text().splitlines()
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"no campaign report for {run_id!r} in {run_dir} ({exc}): check the run id; a "
            "campaign writes its report when it ends"
        ) from None
    records = [RunRecord.model_validate_json(line) for line in lines if line.strip()]
    design = ReportDesign.from_document(
        run_id,
        document,
        fingerprint=summary["fingerprint"],
        status=summary["status"],
        planned_cells=summary["cells"]["planned"],
    )
    _, files = render_report(design, records)
    for name in ("report.md", "report.html"):
        (run_dir / name).write_text(files[name])
    click.echo(str(run_dir / "report.html") if html else files["report.md"], nl=False)


def _limit(value: str | None, current: float | None, cast: type) -> float | int | None:
    """An absolute limit, or ``+N`` added to the current one."""
    if value is None:
        return None
    try:
        if value.startswith("+"):
            return cast(current or 0) + cast(value[1:])  # type: ignore[no-any-return]
        return cast(value)  # type: ignore[no-any-return]
    except ValueError:
        raise ConfigError(f"extend: {value!r} is not a number: give e.g. 300 or +50") from None


@campaign.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="The progress as JSON.")
@click.pass_context
def status(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """A campaign's progress: cells done/running/failed, spend, leader, budget."""
    settings = _settings(ctx)

    async def go() -> CampaignProgress:
        async with open_session(settings) as session:
            handle = session.client.get_workflow_handle(check_run_id(run_id))
            progress: CampaignProgress = await handle.query(
                QUERY_PROGRESS, result_type=CampaignProgress
            )
            return progress

    progress = asyncio.run(go())
    if as_json:
        click.echo(progress.model_dump_json(indent=2))
    else:
        click.echo(progress_line(progress))
        limits = progress.budget.model_dump(exclude_none=True)
        click.echo(f"budget {limits or 'unlimited'}; fingerprint {progress.fingerprint}")
        if progress.error:
            click.echo(f"error: {progress.error}")


@campaign.command()
@click.argument("run_id")
@click.option("--calls", default=None, help="New max_calls (absolute, or +N).")
@click.option("--usd", default=None, help="New max_usd (absolute, or +X).")
@click.option("--detach", is_flag=True, help="Extend and return without following.")
@click.pass_context
def extend(
    ctx: click.Context, run_id: str, calls: str | None, usd: str | None, detach: bool
) -> None:
    """Raise a campaign's shared budget; a campaign awaiting budget starts its next cells."""
    if calls is None and usd is None:
        raise ConfigError("extend needs --calls or --usd (absolute, or +N to add)")
    settings = _settings(ctx)

    async def go() -> CampaignResult | CampaignProgress | None:
        async with open_session(settings) as session:
            handle = session.client.get_workflow_handle(
                check_run_id(run_id), result_type=CampaignResult
            )
            progress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
            new = ExtendBudgetInput(
                max_calls=_limit(calls, progress.budget.max_calls, int),  # type: ignore[arg-type]
                max_usd=_limit(usd, progress.budget.max_usd, float),
            )
            try:
                done = await handle.execute_update(
                    UPDATE_EXTEND_BUDGET, new, result_type=ExtendBudgetResult
                )
            except WorkflowUpdateFailedError as exc:
                cause = exc.cause
                raise ConfigError(f"extend refused: {getattr(cause, 'message', cause)}") from None
            click.echo(f"budget now {done.budget.model_dump(exclude_none=True)}", err=True)
            if detach:
                if session.embedded:
                    spawn_background_worker(settings)
                return None
            return await follow(session, handle)

    outcome = asyncio.run(go())
    if outcome is not None:
        print_outcome(run_id, outcome)
