"""``ponder think``: run a tournament, or print its plan; registers every tournament command.

The commands on existing runs live in ``client.tournament_control``, ``rank`` and ``mutate`` in
``client.tournament_services``, the progress display in ``client.tournament_follow``.
"""

from __future__ import annotations

import asyncio
from typing import Any, get_args

import click
from click.core import ParameterSource

from activities.config import load_settings
from activities.model_types import Usage
from activities.pricing import PRICES_AS_OF, cost_usd
from client.profiles import apply_profile
from client.runs import new_run_id, start_and_follow
from client.tournament_follow import follow, print_outcome
from client.tournament_inputs import build_input
from client.tournament_options import (
    CONCURRENCY_PHASES,
    TEMPERATURE_ROLES,
)
from workflows import phases
from workflows.names import TOURNAMENT
from workflows.run_ids import check_run_id
from workflows.tournament.adaptive import opening_sizes
from workflows.tournament.preflight import preflight
from workflows.tournament.prompts import Style
from workflows.tournament.types import (
    JudgeOrders,
    OnBudgetExhausted,
    Schedule,
    TournamentInput,
    TournamentResult,
)

__all__ = ["think"]


@click.command()
@click.argument("task")
@click.option(
    "--profile",
    default="quick",
    show_default=True,
    help="Built-in (n, k, t, m): quick 4/2/1/2, balanced 8/3/2/4, paper 20/4/3/10; "
    "or a saved profile (ponder profile list).",
)
@click.option("--n", type=int, default=None, help="Population size (overrides the profile's).")
@click.option("--k", type=int, default=None, help="Judge degree per generation (overrides).")
@click.option("--t", type=int, default=None, help="Number of generations (overrides).")
@click.option("--m", type=int, default=None, help="Final judging degree (overrides).")
@click.option(
    "--lambda",
    "lambda_",
    type=float,
    default=None,
    help="Bradley-Terry L2 regularisation (profile default 0.01).",
)
@click.option(
    "--temperature",
    multiple=True,
    metavar="ROLE=X",
    help=f"Sampling temperature of a role ({', '.join(TEMPERATURE_ROLES)}); repeatable.",
)
@click.option("--provider", default=None, help="Provider for every role, e.g. the simulated one.")
@click.option("--model", default=None, help="provider:model for every role.")
@click.option("--judge-model", default=None, help="provider:model of the judge.")
@click.option("--mutator-model", default=None, help="provider:model of the mutator.")
@click.option("--finalizer-model", default=None, help="Polish the winner with this model.")
@click.option("--rubric", default=None, help="What makes an answer better (default: built-in).")
@click.option(
    "--prompt-style",
    type=click.Choice(get_args(Style)),
    default="general",
    show_default=True,
    help="Built-in prompt set (paper-programming: C++17 solutions with code rubrics).",
)
@click.option(
    "--prompts",
    type=click.Path(dir_okay=False),
    default=None,
    help="JSON or TOML file of per-role prompt overrides ({role: {system, user}}).",
)
@click.option(
    "--include-prompts",
    is_flag=True,
    help="Store every rendered prompt in the run directory (prompts/<sha256>.json).",
)
@click.option(
    "--schedule",
    type=click.Choice(get_args(Schedule)),
    default="k-regular",
    show_default=True,
    help="Pair schedule of judging: k-regular (the paper) or adaptive (Thompson sampling).",
)
@click.option(
    "--judge-orders",
    type=click.Choice(get_args(JudgeOrders)),
    default="one",
    show_default=True,
    help="both: judge every pair A/B and B/A (2x judge calls); agreement is a win, "
    "disagreement a tie, so a judge's position bias cancels out.",
)
@click.option(
    "--judges",
    multiple=True,
    metavar="A,B,...",
    help="A judge panel of 2-9 models (preferably of different families): each pair by "
    "majority, a tie without one. Replaces --judge-model.",
)
@click.option(
    "--bootstrap-resamples",
    type=click.IntRange(min=0),
    default=TournamentInput.model_fields["bootstrap_resamples"].default,
    show_default=True,
    help="Resamples behind each final score's 95% interval (0: no intervals).",
)
@click.option(
    "--concurrency",
    multiple=True,
    metavar="N|PHASE=N",
    help="Calls in flight at once: N for every phase, or PHASE=N for "
    f"{', '.join(CONCURRENCY_PHASES)} (default 8).",
)
@click.option("--seed", type=int, default=None, help="Run seed (default: drawn and recorded).")
@click.option(
    "--max-calls", type=click.IntRange(min=0), default=None, help="Budget: max model calls."
)
@click.option("--max-usd", type=click.FloatRange(min=0), default=None, help="Budget: max USD.")
@click.option(
    "--max-input-tokens",
    type=click.IntRange(min=0),
    default=None,
    help="Budget: max input tokens over the run.",
)
@click.option(
    "--max-output-tokens",
    multiple=True,
    metavar="N|ROLE=N",
    help="N: budget of output tokens over the run; ROLE=N: cap of each call of ROLE "
    "(generate, judge, mutate, finalize). Repeatable.",
)
@click.option(
    "--max-critique-chars",
    type=int,
    default=TournamentInput.model_fields["critique_chars"].default,
    show_default=True,
    help="Cap on the critique a mutator receives (at least 256).",
)
@click.option(
    "--on-budget-exhausted",
    type=click.Choice(get_args(OnBudgetExhausted)),
    default="pause",
    show_default=True,
    help="pause: wait for ponder extend; fail: end the run with budget.exhausted.",
)
@click.option(
    "--invalid-json-retries",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Extra (billed) judge calls when its output is not a valid verdict.",
)
@click.option(
    "--include-raw-outputs", is_flag=True, help="Keep the judge's raw text in comparisons."
)
@click.option("--run-id", default=None, help="Workflow id (default: think-<random>).")
@click.option("--detach", is_flag=True, help="Start the run, print its id and return.")
@click.option("--dry-run", is_flag=True, help="Print the plan (calls, rounds, USD); no run.")
@click.pass_context
def think(ctx: click.Context, **options: Any) -> None:
    """Run a tournament on TASK (or @file): generate, judge, rank, mutate, rank again."""
    settings = load_settings(ctx.obj["config"])
    given = {k for k in options if ctx.get_parameter_source(k) != ParameterSource.DEFAULT}
    options, _ = apply_profile(options, given, settings.home)  # a saved --profile NAME
    run_id = check_run_id(options["run_id"] or new_run_id("think"))
    options["run_id"] = run_id
    payload = build_input(settings, **options)
    if options["dry_run"]:
        models = payload.models
        in_use = [m or payload.model for m in (models.generate, models.mutate)]
        in_use += payload.judge_panel + ([models.finalize] if models.finalize else [])
        _print_plan(payload, list(dict.fromkeys(in_use)))
        return
    for risk in preflight(payload).self_preference:
        click.echo(f"warning: {risk.message}", err=True)

    started = start_and_follow(
        settings, TOURNAMENT, payload, run_id, TournamentResult, follow, detach=options["detach"]
    )
    print_outcome(run_id, asyncio.run(started))


# A dry run cannot know token counts; this per-call shape gives a rough USD figure.
ROUGH_CALL_USAGE = Usage(input_tokens=2_000, output_tokens=1_000)


def _adaptive_rounds(payload: TournamentInput, n: int, phase: str, calls: int) -> list[int]:
    """Judge calls per round of an adaptive judging phase (the rank block is not adaptive)."""
    if payload.schedule != "adaptive" or calls == 0:
        return []
    name, _ = phases.split(phase)
    if name == phases.FINAL_JUDGING and payload.rank is not None:
        return []
    if name not in (phases.GENERATION_JUDGING, phases.FINAL_JUDGING):
        return []
    # Rounds of pairs; each pair costs calls_per_pair calls (the phase's calls count them all).
    return opening_sizes(n, calls // payload.calls_per_pair, payload.concurrency.judge)


def _print_plan(payload: TournamentInput, models_in_use: list[str]) -> None:
    usd_per_call = None
    if models_in_use and all(m in payload.prices for m in models_in_use):
        usd_per_call = max(cost_usd(payload.prices[m], ROUGH_CALL_USAGE) for m in models_in_use)
    checked = preflight(payload, usd_per_call=usd_per_call)
    plan = checked.tournament
    rounds = {
        p.phase: _adaptive_rounds(payload, checked.profile.n, p.phase, p.calls) for p in plan.phases
    }
    # Each adaptive batch waits for the fit of the one before: one more sequential round each.
    sequential = plan.sequential_rounds + sum(max(len(r) - 1, 0) for r in rounds.values())
    click.echo(
        f"calls: {plan.planned_calls} (worst case {plan.worst_case_calls} with judge "
        f"retries), sequential rounds: {sequential}"
    )
    if plan.calls_per_pair > 1:
        panel = payload.judge_panel
        who = f"{len(panel)} judges" if len(panel) > 1 else "1 judge"
        orders = "both orders" if payload.judge_orders == "both" else "one order"
        click.echo(f"judge calls per pair: {plan.calls_per_pair} ({who}, {orders})")
    for phase in plan.phases:
        line = f"  {phase.phase:<24} {phase.calls}"
        if rounds[phase.phase]:
            sizes = rounds[phase.phase]
            line += f"  (adaptive: {len(sizes)} rounds of {' + '.join(map(str, sizes))})"
        click.echo(line)
    if plan.estimated_usd is not None:
        click.echo(
            f"estimated USD: {plan.estimated_usd:.2f} (worst case {plan.worst_case_usd:.2f}; "
            "rough: ~2k input + ~1k output tokens per call at the dearest model in use)"
        )
    else:
        unpriced = sorted({m for m in models_in_use if m not in payload.prices})
        click.echo(
            f"estimated USD: unknown (no price for {', '.join(unpriced)}; add it to ponder.toml)"
        )
    click.echo(f"prices: built-in table as of {PRICES_AS_OF}; ponder.toml [prices] overrides")
    if plan.warning:
        click.echo(f"warning: {plan.warning}")
    for risk in checked.self_preference:
        click.echo(f"warning: {risk.message}")
