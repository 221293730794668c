"""``ponder think`` and the commands that follow, steer and report on a tournament."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, get_args

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError

from activities.config import Settings, load_settings
from activities.errors import ConfigError
from activities.model_types import Usage
from activities.pricing import cost_usd
from activities.providers import default_model_for, price_table, resolve_model
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
from workflows.budget import BudgetLimits
from workflows.names import QUERY_PROGRESS, TOURNAMENT, UPDATE_EXTEND_BUDGET
from workflows.tournament.errors import TournamentError
from workflows.tournament.preflight import preflight, rank_profile
from workflows.tournament.profiles import BUILTIN_PROFILES, Profile, RankBlock
from workflows.tournament.prompts import Style
from workflows.tournament.types import (
    Concurrency,
    ExtendBudgetInput,
    ExtendBudgetResult,
    GivenCandidate,
    OnBudgetExhausted,
    Progress,
    RoleModels,
    Schedule,
    TournamentInput,
    TournamentResult,
)

__all__ = ["register"]

EXIT_PAUSED = 75
console = Console(stderr=True)


def _read_task(task: str) -> str:
    if not task.startswith("@"):
        return task
    path = Path(task[1:])
    try:
        return path.read_text()
    except OSError as exc:
        raise ConfigError(f"task file {path} cannot be read ({exc.strerror})") from None


def _refuse(exc: TournamentError) -> ConfigError:
    return ConfigError(f"{exc.code}: {exc.message}")


def build_input(settings: Settings, **o: Any) -> TournamentInput:
    """The workflow input from ``ponder think`` options; refuses what preflight refuses."""
    # Keys matter where calls are made: here in embedded mode, not for a dry run or a cluster.
    keys_here = not (settings.temporal_address or o["dry_run"])
    provider = o["provider"]
    base = o["model"] or (default_model_for(provider, settings) if provider else None)
    models = RoleModels(
        generate=base,
        judge=o["judge_model"] or base,
        mutate=o["mutator_model"] or base,
        finalize=o["finalizer_model"],
    )
    default = base or TournamentInput.model_fields["model"].default
    in_use = [m or default for m in (models.generate, models.judge, models.mutate)]
    in_use += [models.finalize] if models.finalize else []
    for spec in in_use:
        resolve_model(spec, settings, require_key=keys_here)
    custom = None
    if any(o[key] is not None for key in ("n", "k", "t", "m")):
        start = BUILTIN_PROFILES[o["profile"]]
        custom = Profile(
            n=o["n"] if o["n"] is not None else start.n,
            k=o["k"] if o["k"] is not None else start.k,
            t=o["t"] if o["t"] is not None else start.t,
            m=o["m"] if o["m"] is not None else start.m,
        )
    payload = TournamentInput(
        task=_read_task(o["task"]),
        rubric=o["rubric"],
        profile=o["profile"],
        custom=custom,
        model=default,
        models=models,
        prompt_style=o["prompt_style"],
        budget=BudgetLimits(
            max_calls=o["max_calls"],
            max_usd=o["max_usd"],
            max_input_tokens=o["max_input_tokens"],
            max_output_tokens=o["max_output_tokens"],
        ),
        prices=price_table(
            in_use, settings, require=o["max_usd"] is not None, require_key=keys_here
        ),
        schedule=o["schedule"],
        concurrency=Concurrency(
            generate=o["concurrency"], judge=o["concurrency"], mutate=o["concurrency"]
        ),
        seed=o["seed"],
        run_id=o["run_id"],
        include_raw_outputs=o["include_raw_outputs"],
        invalid_json_retries=o["invalid_json_retries"],
        on_budget_exhausted=o["on_budget_exhausted"],
    )

    try:
        preflight(payload)
    except TournamentError as exc:
        raise _refuse(exc) from None
    return payload


def _progress_table(p: Progress, started: float | None) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    limit = p.budget.max_calls if p.budget.max_calls is not None else p.calls_planned
    table.add_row("run", p.run_id)
    table.add_row("status", p.status + (f" ({p.blocking_limit})" if p.blocking_limit else ""))
    table.add_row("phase", p.phase)
    table.add_row("calls", f"{p.spent.calls} / {limit}")
    table.add_row("tokens", f"{p.spent.input_tokens} in, {p.spent.output_tokens} out")
    if p.spent.usd:
        table.add_row("usd", f"{p.spent.usd:.4f}")
    if started is not None:
        table.add_row("elapsed", f"{time.monotonic() - started:.1f}s")
    if p.leaderboard:
        leader = p.leaderboard[0]
        table.add_row("leader", f"{leader.candidate_id} (score {leader.score:+.2f})")
    return table


async def follow(session: Session, handle: WorkflowHandle) -> TournamentResult | Progress:
    """Show progress until the run ends (its result) or pauses on budget (its progress).

    Ctrl-C detaches: the run goes on (with a background worker in embedded mode).
    """
    started = time.monotonic()
    result_task = asyncio.ensure_future(run_result(handle))
    with ctrl_c_detaches() as interrupted, Live(console=console, refresh_per_second=4) as live:
        while not result_task.done():
            if interrupted.is_set():
                result_task.cancel()
                detach(session, handle.id)
            try:
                progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
            except RPCError:
                progress = None
            if progress is not None:
                live.update(_progress_table(progress, started))
                # Paused: leave once the calls already dispatched have landed (paid once).
                if progress.status == "awaiting_budget" and progress.in_flight == 0:
                    result_task.cancel()
                    return progress
            await asyncio.wait({result_task}, timeout=0.5)
        with contextlib.suppress(RPCError):  # the last frame shows the final state
            final = await handle.query(QUERY_PROGRESS, result_type=Progress)
            live.update(_progress_table(final, started))
    console.line()
    try:
        return result_task.result()
    except WorkflowFailureError as exc:
        raise RunFailed(f"run {handle.id} ended: {failure_message(exc)}") from exc


def resume_command(run_id: str, paused: Progress) -> str:
    """The exact ``ponder extend`` that lets a paused run go on past its blocking limit."""
    spent = paused.spent
    if paused.blocking_limit == "max_usd":
        return f"ponder extend {run_id} --usd +{max(spent.usd, 0.01):.2f}"
    if paused.blocking_limit == "max_input_tokens":
        return f"ponder extend {run_id} --input-tokens +{max(spent.input_tokens, 1)}"
    if paused.blocking_limit == "max_output_tokens":
        return f"ponder extend {run_id} --output-tokens +{max(spent.output_tokens, 1)}"
    # The nominal calls left, plus a tenth for invalid-output retries.
    more = max(paused.calls_planned - spent.calls, 0) + max(paused.calls_planned // 10, 1)
    return f"ponder extend {run_id} --calls +{more}"


def _print_outcome(run_id: str, result: TournamentResult | Progress) -> None:
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
    click.echo(f"report: {run_dir / 'report.html'}", err=True)


def _common_session(ctx: click.Context) -> Settings:
    return load_settings(ctx.obj["config"])


@click.command()
@click.argument("task")
@click.option(
    "--profile", type=click.Choice(list(BUILTIN_PROFILES)), default="quick", show_default=True
)
@click.option("--n", type=int, default=None, help="Custom population size.")
@click.option("--k", type=int, default=None, help="Custom judge degree per generation.")
@click.option("--t", type=int, default=None, help="Custom number of generations.")
@click.option("--m", type=int, default=None, help="Custom final judging degree.")
@click.option("--provider", default=None, help="Provider for every role, e.g. the simulated one.")
@click.option("--model", default=None, help="provider:model for every role.")
@click.option("--judge-model", default=None)
@click.option("--mutator-model", default=None)
@click.option("--finalizer-model", default=None, help="Polish the winner with this model.")
@click.option("--rubric", default=None)
@click.option(
    "--prompt-style",
    type=click.Choice(get_args(Style)),
    default="general",
    show_default=True,
)
@click.option(
    "--schedule",
    type=click.Choice(get_args(Schedule)),
    default="k-regular",
    show_default=True,
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Calls in flight at once per phase.",
)
@click.option("--seed", type=int, default=None)
@click.option("--max-calls", type=click.IntRange(min=0), default=None)
@click.option("--max-usd", type=click.FloatRange(min=0), default=None)
@click.option("--max-input-tokens", type=click.IntRange(min=0), default=None)
@click.option("--max-output-tokens", type=click.IntRange(min=0), default=None)
@click.option(
    "--on-budget-exhausted",
    type=click.Choice(get_args(OnBudgetExhausted)),
    default="pause",
    show_default=True,
)
@click.option(
    "--invalid-json-retries",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Extra (billed) judge calls when its output is not a valid verdict.",
)
@click.option("--include-raw-outputs", is_flag=True)
@click.option("--run-id", default=None)
@click.option("--detach", is_flag=True, help="Start the run, print its id and return.")
@click.option("--dry-run", is_flag=True, help="Print the plan (calls, rounds, USD); no run.")
@click.pass_context
def think(ctx: click.Context, **options: Any) -> None:
    """Run a tournament on TASK (or @file): generate, judge, rank, mutate, rank again."""
    settings = _common_session(ctx)
    run_id = check_run_id(options["run_id"] or new_run_id("think"))
    options["run_id"] = run_id
    payload = build_input(settings, **options)
    if options["dry_run"]:
        models = payload.models
        in_use = [m or payload.model for m in (models.generate, models.judge, models.mutate)]
        _print_plan(payload, in_use + ([models.finalize] if models.finalize else []))
        return

    async def go() -> TournamentResult | Progress:
        async with open_session(settings, worker=not options["detach"]) as session:
            handle = await start_run(session, TOURNAMENT, payload, run_id, TournamentResult)
            if options["detach"]:
                if session.embedded:
                    spawn_background_worker(settings)
                click.echo(run_id)
                sys.exit(0)
            return await follow(session, handle)

    result = asyncio.run(go())
    _print_outcome(run_id, result)


# A dry run cannot know token counts; this per-call shape gives a rough USD figure.
ROUGH_CALL_USAGE = Usage(input_tokens=2_000, output_tokens=1_000)


def _print_plan(payload: TournamentInput, models_in_use: list[str]) -> None:
    usd_per_call = None
    if models_in_use and all(m in payload.prices for m in models_in_use):
        usd_per_call = max(cost_usd(payload.prices[m], ROUGH_CALL_USAGE) for m in models_in_use)
    plan = preflight(payload, usd_per_call=usd_per_call).tournament
    click.echo(
        f"calls: {plan.planned_calls} (worst case {plan.worst_case_calls} with judge "
        f"retries), sequential rounds: {plan.sequential_rounds}"
    )
    for phase in plan.phases:
        click.echo(f"  {phase.phase:<24} {phase.calls}")
    if plan.estimated_usd is not None:
        click.echo(
            f"estimated USD: {plan.estimated_usd:.2f} (worst case {plan.worst_case_usd:.2f}; "
            "rough: ~2k input + ~1k output tokens per call at the dearest model in use)"
        )
    else:
        click.echo("estimated USD: unknown (no price for a model in use; see ponder.toml)")
    if plan.warning:
        click.echo(f"warning: {plan.warning}")


async def _handle(session: Session, run_id: str) -> WorkflowHandle:
    return session.client.get_workflow_handle(run_id, result_type=TournamentResult)


@click.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the progress query as JSON.")
@click.pass_context
def status(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """Show a tournament's progress: status, phase, budget, leaderboard top 5."""
    settings = _common_session(ctx)

    async def go() -> Progress:
        # A query is answered by a worker, so embedded mode runs one here too.
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            return await handle.query(QUERY_PROGRESS, result_type=Progress)

    progress = asyncio.run(go())
    if as_json:
        click.echo(json.dumps(progress.model_dump(mode="json"), indent=2))
        return
    out = Console()
    out.print(_progress_table(progress, started=None))
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


@click.command()
@click.argument("run_id")
@click.pass_context
def watch(ctx: click.Context, run_id: str) -> None:
    """Follow a run until it completes, fails or pauses (Ctrl-C detaches again)."""
    from client.runs import wait_or_detach
    from workflows.ask_types import AskResult
    from workflows.names import ASK

    settings = _common_session(ctx)

    async def go() -> TournamentResult | AskResult | Progress:
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            if (await handle.describe()).workflow_type == ASK:
                ask = session.client.get_workflow_handle(run_id, result_type=AskResult)
                return await wait_or_detach(session, ask)
            return await follow(session, handle)

    result = asyncio.run(go())
    if isinstance(result, AskResult):
        click.echo(result.response.text)
        return
    _print_outcome(run_id, result)


def _limit(value: str | None, current: float | None, cast: type) -> Any:
    if value is None:
        return None
    if value.startswith("+"):
        return cast(current or 0) + cast(value[1:])
    return cast(value)


@click.command()
@click.argument("run_id")
@click.option("--calls", default=None, help="New max_calls (absolute, or +N).")
@click.option("--usd", default=None, help="New max_usd (absolute, or +X).")
@click.option("--input-tokens", default=None, help="New max_input_tokens (or +N).")
@click.option("--output-tokens", default=None, help="New max_output_tokens (or +N).")
@click.option("--detach", is_flag=True, help="Extend and return without following the run.")
@click.pass_context
def extend(
    ctx: click.Context,
    run_id: str,
    calls: str | None,
    usd: str | None,
    input_tokens: str | None,
    output_tokens: str | None,
    detach: bool,
) -> None:
    """Raise a run's budget limits; a paused run continues where it stopped."""
    settings = _common_session(ctx)

    async def go() -> TournamentResult | Progress:
        # A worker here answers the query; with --detach a background one continues the run.
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
            limits = progress.budget
            try:
                new = ExtendBudgetInput(
                    max_calls=_limit(calls, limits.max_calls, int),
                    max_usd=_limit(usd, limits.max_usd, float),
                    max_input_tokens=_limit(input_tokens, limits.max_input_tokens, int),
                    max_output_tokens=_limit(output_tokens, limits.max_output_tokens, int),
                )
            except ValueError as exc:
                raise ConfigError(f"extend: {exc}: give numbers such as 300 or +50") from None
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
                sys.exit(0)
            return await follow(session, handle)

    _print_outcome(run_id, asyncio.run(go()))


@click.command()
@click.argument("run_id")
@click.pass_context
def cancel(ctx: click.Context, run_id: str) -> None:
    """Cancel a run: calls in flight finish and are recorded, artifacts are written."""
    settings = _common_session(ctx)

    async def go() -> None:
        async with open_session(settings) as session:
            handle = await _handle(session, run_id)
            await handle.cancel()
            # The run ends CANCELED (or finished first); either way describe() tells.
            with contextlib.suppress(Exception):
                await handle.result()
            description = await handle.describe()
            state = description.status.name.lower() if description.status else "unknown"
            click.echo(f"run {run_id}: {state}", err=True)

    asyncio.run(go())
    sys.exit(1)


@click.command()
@click.argument("run_id")
@click.pass_context
def report(ctx: click.Context, run_id: str) -> None:
    """Print the path of a run's report.html (re-rendered from its run directory)."""
    from activities.run_store import RunStore
    from activities.tournament.report import render_report, report_data_from_run_dir

    check_run_id(run_id)  # run.id_invalid (exit 2) before anything is touched
    settings = _common_session(ctx)
    store = RunStore(settings.runs_dir)
    run_dir = store.run_dir(run_id)
    if not (run_dir / "summary.json").exists():
        raise ConfigError(f"no tournament artifacts in {run_dir}: check the run id")
    path = store.write(run_id, "report.html", render_report(report_data_from_run_dir(run_dir)))
    click.echo(str(path))


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--task", required=True, help="The task the candidates answer (or @file).")
@click.option("--rubric", default=None)
@click.option("--model", default=None, help="Judge model, provider:model.")
@click.option(
    "--max-calls", type=int, default=None, help="Cap on judge calls; needed above 100 pairs."
)
@click.option("--seed", type=int, default=None)
@click.option("--run-id", default=None)
@click.pass_context
def rank(
    ctx: click.Context,
    files: tuple[str, ...],
    task: str,
    rubric: str | None,
    model: str | None,
    max_calls: int | None,
    seed: int | None,
    run_id: str | None,
) -> None:
    """Rank candidate answers (one per FILE, id = file name) by all-pairs judging."""
    settings = _common_session(ctx)
    run_id = check_run_id(run_id or new_run_id("rank"))
    given = []
    for name in files:
        try:
            given.append(GivenCandidate(id=Path(name).stem, text=Path(name).read_text()))
        except OSError as exc:
            raise ConfigError(f"candidate file {name} cannot be read ({exc.strerror})") from None
    judge = model or TournamentInput.model_fields["model"].default
    resolve_model(judge, settings, require_key=not settings.temporal_address)
    payload = TournamentInput(
        task=_read_task(task),
        rubric=rubric,
        custom=rank_profile(len(given)),
        model=judge,
        rank=RankBlock(mode="all-pairs", max_calls=max_calls),
        seed=seed,
        run_id=run_id,
        candidates=given,
        prices=price_table([judge], settings, require_key=not settings.temporal_address),
    )
    try:
        preflight(payload)
    except TournamentError as exc:
        raise _refuse(exc) from None

    async def go() -> TournamentResult | Progress:
        async with open_session(settings) as session:
            handle = await start_run(session, TOURNAMENT, payload, run_id, TournamentResult)
            return await follow(session, handle)

    result = asyncio.run(go())
    if isinstance(result, Progress):
        _print_outcome(run_id, result)
        return
    for row in result.leaderboard:
        click.echo(
            f"{row.rank:>3}  {row.candidate_id:<24} {row.score:+.3f}  "
            f"{row.wins}W {row.losses}L {row.ties}T"
        )
    click.echo(f"report: {Path(result.run_dir) / 'report.html'}", err=True)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--task", required=True, help="The task the candidate answers (or @file).")
@click.option("--critique", required=True, help="What to improve (or @file).")
@click.option("--rubric", default=None)
@click.option("--model", default=None, help="Mutator model, provider:model.")
@click.option(
    "--prompt-style",
    type=click.Choice(get_args(Style)),
    default="general",
    show_default=True,
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.pass_context
def mutate(
    ctx: click.Context,
    file: str,
    task: str,
    critique: str,
    rubric: str | None,
    model: str | None,
    prompt_style: str,
    seed: int,
) -> None:
    """Improve one candidate answer from a critique (one mutate call)."""
    from client.runs import wait_or_detach
    from workflows.ask_types import AskInput, AskResult
    from workflows.names import ASK
    from workflows.tournament.prompts import DEFAULT_RUBRIC, render

    settings = _common_session(ctx)
    mutator = model or TournamentInput.model_fields["model"].default
    resolve_model(mutator, settings, require_key=not settings.temporal_address)
    candidate = _read_task(f"@{file}")
    prompt = render(
        "mutate",
        {
            "task": _read_task(task),
            "rubric": rubric or DEFAULT_RUBRIC,
            "candidate": candidate,
            "critique": _read_task(critique),
        },
        style=prompt_style,  # type: ignore[arg-type]
    )
    run_id = new_run_id("mutate")
    payload = AskInput(
        question=prompt.user,
        system=prompt.system,
        model=mutator,
        role="mutate",
        seed=seed,
        max_output_tokens=prompt.max_output_tokens,
        run_id=run_id,
    )

    async def go() -> AskResult:
        async with open_session(settings) as session:
            handle = await start_run(session, ASK, payload, run_id, AskResult)
            return await wait_or_detach(session, handle)

    click.echo(asyncio.run(go()).response.text)


def register(group: click.Group) -> None:
    for command in (think, status, watch, extend, cancel, report, rank, mutate):
        group.add_command(command)
