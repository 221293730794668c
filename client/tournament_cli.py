"""``ponder think``: run a tournament, or print its plan; registers every tournament command.

The commands on existing runs live in ``client.tournament_control``, ``rank`` and ``mutate`` in
``client.tournament_services``, the progress display in ``client.tournament_follow``. What runs a
tournament (the SDK, providers, the estimate) is imported in the command's body, not for
``--help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from client.click_fields import settings_options
from client.ledger_cli import ledger_option
from workflows.names import TOURNAMENT
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from activities.config import Settings
    from client.tournament_estimate import TournamentEstimate
    from workflows.tournament.types import TournamentInput

__all__ = ["think", "think_input"]


@click.command()
@click.argument("task")
@click.option(
    "--profile",
    default="quick",
    show_default=True,
    help="Built-in (n, k, t, m): quick 4/2/1/2, balanced 8/3/2/4, paper 20/4/3/10; "
    "or a saved profile (ponder profile list).",
)
@settings_options("TournamentSettings")  # n, k, t, m, lambda, temperature, provider, model, ...
@click.option(
    "--prompts",
    type=click.Path(dir_okay=False),
    default=None,
    help="JSON or TOML file of per-role prompt overrides ({role: {system, user}}).",
)
@settings_options("RunOptions")  # judge, mutator and finalizer model, seed, budget, run id, ...
@ledger_option
@click.option("--detach", is_flag=True, help="Start the run, print its id and return.")
@click.option("--dry-run", is_flag=True, help="Print the plan (calls, rounds, USD); no run.")
@click.pass_context
def think(ctx: click.Context, **options: Any) -> None:
    """Run a tournament on TASK (or @file): generate, judge, rank, mutate, rank again."""
    from activities.config import load_settings
    from client.think_http import (
        Ended,
        follow_handover,
        new_think_id,
        print_ended,
        think_served,
    )
    from workflows.tournament.preflight import preflight

    settings = load_settings(ctx.obj["config"])
    run_id = check_run_id(options["run_id"] or new_think_id())
    payload = think_input(ctx, settings, run_id)
    if options["dry_run"]:
        from client.tournament_estimate import estimate

        _print_plan(estimate(payload))
        return
    for risk in preflight(payload).self_preference:
        click.echo(f"warning: {risk.message}", err=True)

    # Served (the embedded server and this configuration's background worker up): started and,
    # when it ends soon, followed over the server's HTTP API, with no SDK to load.
    served = None if options["detach"] else think_served(settings, payload)
    if isinstance(served, Ended):
        print_ended(run_id, served)
        return
    # What prints the outcome (rich, the tables) loads after the start, while the run goes on.
    import asyncio

    from client.tournament_outcome import print_outcome

    if served is not None:
        print_outcome(run_id, asyncio.run(follow_handover(settings, payload, served)))
        return

    from client.runs import start_and_follow
    from client.tournament_follow import follow
    from workflows.tournament.types import TournamentResult

    started = start_and_follow(
        settings, TOURNAMENT, payload, run_id, TournamentResult, follow, detach=options["detach"]
    )
    print_outcome(run_id, asyncio.run(started))


def think_input(ctx: click.Context, settings: Settings, run_id: str) -> TournamentInput:
    """The workflow input of a parsed ``ponder think`` (run ``run_id``): a saved ``--profile``
    filled in beneath the options given."""
    from client.tournament_inputs import build_input
    from workflows.tournament.profiles import BUILTIN_PROFILES

    options = dict(ctx.params)
    if options["profile"] not in BUILTIN_PROFILES:  # a saved --profile NAME, filled in beneath
        from client.profiles import apply_profile

        given = {k for k in ctx.params if ctx.get_parameter_source(k) != ParameterSource.DEFAULT}
        options, _ = apply_profile(options, given, settings.home)
    return build_input(settings, **options | {"run_id": run_id})


def _print_plan(plan: TournamentEstimate) -> None:
    click.echo(
        f"calls: {plan.planned_calls} (worst case {plan.worst_case_calls} with judge "
        f"retries), sequential rounds: {plan.sequential_rounds}"
    )
    if plan.calls_per_pair > 1:
        who = f"{plan.judges} judges" if plan.judges > 1 else "1 judge"
        orders = "both orders" if plan.judge_orders == "both" else "one order"
        click.echo(f"judge calls per pair: {plan.calls_per_pair} ({who}, {orders})")
    for phase in plan.phases:
        line = f"  {phase.phase:<24} {phase.calls}"
        if phase.adaptive_rounds:
            sizes = phase.adaptive_rounds
            line += f"  (adaptive: {len(sizes)} rounds of {' + '.join(map(str, sizes))})"
        click.echo(line)
    if plan.estimated_usd is not None and plan.worst_case_usd is not None:
        click.echo(
            f"estimated USD: {plan.estimated_usd:.2f} (worst case {plan.worst_case_usd:.2f}; "
            "rough: ~2k input + ~1k output tokens per call at the dearest model in use)"
        )
    else:
        click.echo(
            f"estimated USD: unknown (no price for {', '.join(plan.unpriced)}; add it to "
            "ponder.toml)"
        )
    click.echo(f"prices: built-in table as of {plan.prices_as_of}; ponder.toml [prices] overrides")
    for warning in plan.warnings:
        click.echo(f"warning: {warning}")
