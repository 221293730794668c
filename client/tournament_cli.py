"""``ponder think``: run a tournament, or print its plan; registers every tournament command.

The commands on existing runs live in ``client.tournament_control``, ``rank`` and ``mutate`` in
``client.tournament_services``, the progress display in ``client.tournament_follow``.
"""

from __future__ import annotations

import asyncio
from typing import Any, get_args

import click
from click.core import ParameterSource

from activities.config import Settings, load_settings
from activities.model_types import Usage
from activities.pricing import PRICES_AS_OF, cost_usd
from activities.providers import default_model_for, price_table, resolve_model
from client.profiles import apply_profile
from client.runs import new_run_id, start_and_follow
from client.tournament_control import cancel, extend, report, status, watch
from client.tournament_follow import follow, print_outcome
from client.tournament_options import (
    CONCURRENCY_PHASES,
    TEMPERATURE_ROLES,
    TOKEN_ROLES,
    load_prompts,
    read_task,
    role_values,
)
from client.tournament_services import mutate, rank
from workflows import phases
from workflows.budget import BudgetLimits
from workflows.names import TOURNAMENT
from workflows.run_ids import check_run_id
from workflows.tournament.adaptive import batch_sizes
from workflows.tournament.preflight import preflight
from workflows.tournament.profiles import BUILTIN_PROFILES, Profile
from workflows.tournament.prompts import Style
from workflows.tournament.types import (
    Concurrency,
    OnBudgetExhausted,
    RoleModels,
    Schedule,
    TournamentInput,
    TournamentResult,
)

__all__ = ["build_input", "register", "think"]


def _profile(o: dict[str, Any]) -> Profile | None:
    """The built-in profile with exactly the named overrides; None when nothing is overridden."""
    updates: dict[str, Any] = {key: o[key] for key in ("n", "k", "t", "m") if o[key] is not None}
    if o["lambda_"] is not None:
        updates["lambda_"] = o["lambda_"]
    temperatures = role_values("--temperature", o["temperature"], TEMPERATURE_ROLES, float)
    for role, value in temperatures.items():
        updates[TEMPERATURE_ROLES[role]] = value
    if not updates:
        return None
    # Validated (model_copy is not), so the model's bounds refuse an absurd --n at once.
    base = BUILTIN_PROFILES[o["profile"]].model_dump(by_alias=False)
    return Profile.model_validate(base | updates)


def _output_tokens(items: tuple[str, ...]) -> tuple[int | None, dict[str, int]]:
    """``--max-output-tokens``: a bare N is the run's budget, ROLE=N caps each call of ROLE."""
    budget: int | None = None
    per_role: list[str] = []
    for item in items:
        if "=" in item:
            per_role.append(item)
            continue
        try:
            budget = int(item)
        except ValueError:
            raise click.BadParameter(
                f"{item!r} is neither a number (the run's output-token budget) nor ROLE=N",
                param_hint="--max-output-tokens",
            ) from None
    caps = role_values("--max-output-tokens", per_role, TOKEN_ROLES, int)
    return budget, {TOKEN_ROLES[role]: cap for role, cap in caps.items()}


def _concurrency(items: tuple[str, ...]) -> Concurrency:
    """``--concurrency``: a bare N for every phase, PHASE=N for one."""
    every: dict[str, int] = {}
    per_phase: list[str] = []
    for item in items:
        if "=" in item:
            per_phase.append(item)
            continue
        try:
            every = dict.fromkeys(CONCURRENCY_PHASES, int(item))
        except ValueError:
            raise click.BadParameter(
                f"{item!r} is neither a number nor PHASE=N", param_hint="--concurrency"
            ) from None
    return Concurrency(**(every | role_values("--concurrency", per_phase, CONCURRENCY_PHASES, int)))


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
    budget_output_tokens, output_caps = _output_tokens(o["max_output_tokens"])
    payload = TournamentInput(
        task=read_task(o["task"]),
        rubric=o["rubric"],
        profile=o["profile"],
        custom=_profile(o),
        model=default,
        models=models,
        prompt_style=o["prompt_style"],
        prompts=load_prompts(o["prompts"]) if o["prompts"] else None,
        budget=BudgetLimits(
            max_calls=o["max_calls"],
            max_usd=o["max_usd"],
            max_input_tokens=o["max_input_tokens"],
            max_output_tokens=budget_output_tokens,
        ),
        prices=price_table(
            in_use, settings, require=o["max_usd"] is not None, require_key=keys_here
        ),
        schedule=o["schedule"],
        concurrency=_concurrency(o["concurrency"]),
        seed=o["seed"],
        run_id=o["run_id"],
        include_raw_outputs=o["include_raw_outputs"],
        include_prompts=o["include_prompts"],
        invalid_json_retries=o["invalid_json_retries"],
        on_budget_exhausted=o["on_budget_exhausted"],
        critique_chars=o["max_critique_chars"],
        output_token_caps=output_caps,
    )
    preflight(payload)  # a TournamentError: coded, one line (client.failures)
    return payload


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
        in_use = [m or payload.model for m in (models.generate, models.judge, models.mutate)]
        _print_plan(payload, in_use + ([models.finalize] if models.finalize else []))
        return

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
    return batch_sizes(n, calls, payload.concurrency.judge)


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


def register(group: click.Group) -> None:
    for command in (think, status, watch, extend, cancel, report, rank, mutate):
        group.add_command(command)
