"""The tournament commands' options, declared once as models (``TournamentSettings``,
``RunOptions``, ``RankOptions``, ``MutateOptions``); reading their values is
``client.tournament_values``."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from client.option_fields import CliOption, cli_fields
from client.tournament_values import (
    CONCURRENCY_PHASES,
    TEMPERATURE_ROLES,
    TokenRole,
    concurrency_values,
    model_list,
    role_values,
)
from workflows.bounds import MAX_CALLS, CallCount, OutputTokens, Seed
from workflows.budget import BudgetLimits
from workflows.inputs import StrictModel
from workflows.sim_options import ModelSpec
from workflows.tournament.critique import MIN_CRITIQUE_CHARS
from workflows.tournament.profiles import ALL_PAIRS_FREE_LIMIT, RankMode
from workflows.tournament.prompts import Style
from workflows.tournament.types import (
    DEFAULT_ROUNDS,
    MAX_BOOTSTRAP_RESAMPLES,
    MAX_CRITIQUE_CHARS,
    MAX_JUDGES,
    MAX_WRITE_INTERVAL_S,
    Concurrency,
    JudgeOrders,
    OnBudgetExhausted,
    Rounds,
    Schedule,
    TournamentInput,
)

__all__ = [
    "MutateOptions",
    "RankOptions",
    "RunOptions",
    "TournamentSettings",
    "settings_values",
]


def _think_default(field: str) -> Any:
    """The workflow input's default: what ``ponder think`` runs with when nothing sets it."""
    return TournamentInput.model_fields[field].default


class TournamentSettings(StrictModel):
    """The ``ponder think`` settings a saved profile holds and the MCP ``think`` tool takes,
    declared once: ``client.profiles.SavedProfile`` and ``client.mcp.args.ThinkArgs`` extend
    it and ``ponder think``'s options are built from it (``client.click_fields``; a
    ``CliOption`` marks a field whose option differs from the plain rule). Every field is
    optional: unset, the profile or the think default applies. What only a run takes (a
    model per role, the seed, the budget, ...) is ``RunOptions``."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    n: int | None = Field(default=None, description="Population size (overrides the profile's).")
    k: int | None = Field(
        default=None, description="Judge degree per generation (overrides the profile's)."
    )
    t: int | None = Field(
        default=None, description="Number of generations (overrides the profile's)."
    )
    m: int | None = Field(
        default=None, description="Final judging degree (overrides the profile's)."
    )
    lambda_: float | None = Field(
        default=None,
        alias="lambda",
        description="Bradley-Terry L2 regularisation (profile default 0.01).",
    )
    temperatures: Annotated[
        dict[str, float],
        CliOption(flag="temperature", multiple=True, metavar="ROLE=X"),
    ] = Field(
        default={},
        description=f"Sampling temperature of a role ({', '.join(TEMPERATURE_ROLES)}).",
    )
    provider: str | None = Field(
        default=None, description="Provider for every role, e.g. sim (the simulated one)."
    )
    model: str | None = Field(default=None, description="provider:model for every role.")
    rubric: str | None = Field(
        default=None, description="What makes an answer better (default: built-in)."
    )
    prompt_style: Annotated[Style | None, CliOption(default=_think_default("prompt_style"))] = (
        Field(
            default=None,
            description="Built-in prompt set (paper-programming: C++17 solutions with code "
            "rubrics).",
        )
    )
    schedule: Annotated[Schedule | None, CliOption(default=_think_default("schedule"))] = Field(
        default=None,
        description="Pair schedule of judging: k-regular (the paper) or adaptive (Thompson "
        "sampling).",
    )
    rounds: Annotated[Rounds | None, CliOption(default=DEFAULT_ROUNDS)] = Field(
        default=None,
        description="pipelined: judge a pair as soon as both of its candidates exist instead of "
        "after the whole phase (the same calls and result, less waiting on slow calls); a "
        "provider still gets at most the widest concurrency of the phases that call it at once. "
        "barrier: each phase waits for the last call of the one before (the reference's "
        "schedule).",
    )
    concurrency: Annotated[
        Concurrency | None,
        CliOption(multiple=True, metavar="N|PHASE=N", form="N for every phase or PHASE=N for one."),
    ] = Field(
        default=None,
        description=f"Calls in flight at once per phase ({', '.join(CONCURRENCY_PHASES)}; "
        "default 8).",
    )
    on_budget_exhausted: Annotated[
        OnBudgetExhausted | None, CliOption(default=_think_default("on_budget_exhausted"))
    ] = Field(
        default=None,
        description="pause: wait for ponder extend; fail: end the run with budget.exhausted.",
    )
    invalid_json_retries: Annotated[
        int | None, CliOption(default=_think_default("invalid_json_retries"))
    ] = Field(
        default=None,
        ge=0,
        description="Extra (billed) judge calls when its output is not a valid verdict.",
    )
    judge_orders: Annotated[
        JudgeOrders | None, CliOption(default=_think_default("judge_orders"))
    ] = Field(
        default=None,
        description="both: judge every pair A/B and B/A (2x judge calls); agreement is a win, "
        "disagreement a tie, so a judge's position bias cancels out.",
    )
    judges: Annotated[
        list[ModelSpec] | None,
        CliOption(multiple=True, metavar="A,B,...", form="Comma-separated (or repeated)."),
    ] = Field(
        default=None,
        min_length=2,
        max_length=MAX_JUDGES,
        description=f"A judge panel of 2-{MAX_JUDGES} models (preferably of different "
        "families): each pair by majority, a tie without one. Replaces the judge model.",
    )


class RunOptions(StrictModel):
    """What a tournament run takes beside its settings, declared once: ``ponder think``'s
    options and the MCP ``think``/``plan`` arguments (``client.mcp.args.TournamentArgs``) are
    built from it. A saved profile holds the models and budget under its own names
    (``models``, ``limits``; ``client.profiles.profile_options`` maps them here)."""

    judge_model: ModelSpec | None = Field(default=None, description="provider:model of the judge.")
    mutator_model: ModelSpec | None = Field(
        default=None, description="provider:model of the mutator."
    )
    finalizer_model: ModelSpec | None = Field(
        default=None, description="Polish the winner with this model (provider:model)."
    )
    bootstrap_resamples: Annotated[
        int | None, CliOption(default=_think_default("bootstrap_resamples"))
    ] = Field(
        default=None,
        ge=0,
        le=MAX_BOOTSTRAP_RESAMPLES,
        description="Resamples behind each final score's 95% interval (0: no intervals).",
    )
    write_interval_s: Annotated[
        float | None, CliOption(default=_think_default("write_interval_s"))
    ] = Field(
        default=None,
        ge=0,
        le=MAX_WRITE_INTERVAL_S,
        description="Least seconds between writes of the run's files while it runs (0: at "
        "every phase); a pause and the end always write.",
    )
    seed: Seed | None = Field(default=None, description="Run seed (default: drawn and recorded).")
    budget: Annotated[
        BudgetLimits,
        CliOption(
            flatten=True,
            fields={
                "max_output_tokens": CliOption(
                    multiple=True,
                    metavar="N",
                    form="(ROLE=N, the earlier form of --output-token-caps, is still taken.)",
                )
            },
        ),
    ] = Field(default=BudgetLimits(), description="The run's budget limits (unset: unlimited).")
    output_token_caps: Annotated[
        dict[TokenRole, OutputTokens], CliOption(multiple=True, metavar="ROLE=N", form="ROLE=N.")
    ] = Field(
        default={},
        description="A cap on the output tokens of each call of a role "
        f"({', '.join(TEMPERATURE_ROLES)}; unset: the built-in caps).",
    )
    critique_chars: Annotated[
        int | None,
        CliOption(default=_think_default("critique_chars"), aliases=("max-critique-chars",)),
    ] = Field(
        default=None,
        # The workflow input's name; the earlier one is still taken from callers written for it.
        validation_alias=AliasChoices("critique_chars", "max_critique_chars"),
        ge=MIN_CRITIQUE_CHARS,
        le=MAX_CRITIQUE_CHARS,
        description=f"Cap on the critique a mutator receives (at least {MIN_CRITIQUE_CHARS}).",
    )
    length_control: bool = Field(
        default=False,
        description="Fit the ranking with a length term, as the public arena's style control "
        "does: scores net of the judge's preference for longer (or shorter) answers; the "
        "summary reports the length coefficient with its interval.",
    )
    weight_by_confidence: bool = Field(
        default=False,
        description="Weigh each verdict by the judge's confidence (1 + 2 x confidence: a sure "
        "verdict counts three times, as Arena-Hard counts a strong preference).",
    )
    include_raw_outputs: bool = Field(
        default=False, description="Keep the judge's raw text in comparisons."
    )
    include_prompts: bool = Field(
        default=False,
        description="Store every rendered prompt in the run directory (prompts/<sha256>.json).",
    )
    run_id: str | None = Field(default=None, description="Workflow id (default: think-<random>).")


def _same_as(model: type[BaseModel], name: str) -> Any:
    """``model``'s field ``name`` (its type's constraints, description and command-line form),
    for a command that takes the same option: declared there, not again here. Typed ``Any``
    as ``Field()`` is, so a type checker takes it as the field's default."""
    info: FieldInfo = copy.copy(model.model_fields[name])
    return info


class RankOptions(StrictModel):
    """``ponder rank``'s options and the MCP ``rank`` tool's arguments (``client.mcp.args.
    RankArgs``), declared once; what ranks as ``ponder think`` ranks takes think's field. The
    task and the candidates are the command's own (a file per candidate on the command line,
    the texts themselves over MCP)."""

    rubric: str | None = _same_as(TournamentSettings, "rubric")
    model: str | None = Field(default=None, description="Judge model, provider:model.")
    judges: list[ModelSpec] | None = _same_as(TournamentSettings, "judges")
    judge_orders: JudgeOrders | None = _same_as(TournamentSettings, "judge_orders")
    length_control: bool = _same_as(RunOptions, "length_control")
    weight_by_confidence: bool = _same_as(RunOptions, "weight_by_confidence")
    rank_mode: RankMode = Field(
        default="auto",
        description=f"auto: all pairs while they fit the cap ({ALL_PAIRS_FREE_LIMIT} pairs "
        "unless --rank-max-calls), else k-regular.",
    )
    rank_k: int | None = Field(default=None, description="Degree of the k-regular schedule.")
    rank_seed: Seed | None = Field(default=None, description="Seed of the pair schedule.")
    rank_max_calls: int | None = Field(
        default=None,
        ge=1,
        le=MAX_CALLS,
        description=f"Cap on judge calls; all-pairs over {ALL_PAIRS_FREE_LIMIT} pairs needs it.",
    )
    max_calls: CallCount | None = _same_as(BudgetLimits, "max_calls")
    seed: Seed | None = Field(default=None, description="Run seed (judge sampling, presentation).")
    run_id: str | None = Field(default=None, description="Workflow id (default: rank-<random>).")


class MutateOptions(StrictModel):
    """``ponder mutate``'s options and the MCP ``mutate`` tool's arguments (``client.mcp.args.
    MutateArgs``), declared once. The task, the candidate and the critique are the command's
    own (files or ``@file`` on the command line, texts over MCP)."""

    rubric: str | None = _same_as(TournamentSettings, "rubric")
    model: str | None = Field(default=None, description="Mutator model, provider:model.")
    prompt_style: Style = Field(
        default=_think_default("prompt_style"),
        description=TournamentSettings.model_fields["prompt_style"].description,
    )
    seed: Seed = Field(default=0, description="Seed for sim draws.")
    run_id: str | None = Field(default=None, description="Workflow id (default: mutate-<random>).")


def settings_values(options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``TournamentSettings`` fields (by alias) that command-line options set: the inverse
    of ``cli_values(settings, TournamentSettings)``, so ``ponder profile save`` reads each
    option as ``ponder think`` does. A repeatable option is read by its field's reader below;
    an option left out (None, empty, a flag left off) sets nothing."""
    readers: dict[str, Callable[[tuple[str, ...]], Any]] = {
        "temperatures": lambda items: role_values("--temperature", items, TEMPERATURE_ROLES, float),
        "concurrency": lambda items: concurrency_values(items).model_dump(exclude_unset=True),
        "judges": lambda items: model_list(items) or None,
    }
    values: dict[str, Any] = {}
    for field in cli_fields(TournamentSettings):
        (name,) = field.path  # no settings field is flattened
        value = options[field.dest]
        if field.marker.multiple:
            if name not in readers:
                raise TypeError(f"TournamentSettings.{name} is repeatable: give it a reader here")
            value = readers[name](value) if value else None
        if value is not None and value is not False:
            values[field.info.alias or name] = value
    return values
