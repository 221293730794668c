"""The workflow inputs of the tournament commands, built from their options: ``think`` (a
tournament), ``rank`` (judge given answers) and ``mutate`` (one mutate call). The CLI, the MCP
tools and the Python client all build here; nothing here parses flags or prints. Each refuses what
preflight refuses (a coded ``TournamentError``) and a model spec or key that cannot be used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from activities.config import Settings
from activities.errors import ConfigError
from activities.providers import default_model_for, price_table, resolve_model
from client.tournament_values import (
    TEMPERATURE_ROLES,
    TOKEN_ROLES,
    bare_and_keyed,
    concurrency_values,
    load_prompts,
    model_list,
    read_file,
    read_task,
    role_values,
)
from workflows.budget import BudgetLimits
from workflows.tournament.preflight import preflight, rank_profile
from workflows.tournament.profiles import BUILTIN_PROFILES, Profile, RankMode, rank_block
from workflows.tournament.types import GivenCandidate, JudgeOrders, RoleModels, TournamentInput

if TYPE_CHECKING:
    from workflows.ask_types import AskInput

__all__ = ["build_input", "build_mutate_input", "build_rank_input"]


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
    """``--max-output-tokens``: a bare N is the run's budget; ROLE=N, the earlier spelling of
    ``--output-token-caps ROLE=N``, caps each call of ROLE."""
    budget, per_role = bare_and_keyed(
        "--max-output-tokens", items, key="ROLE", bare=" (the run's output-token budget)"
    )
    caps = role_values("--max-output-tokens", per_role, TOKEN_ROLES, int)
    return budget, {TOKEN_ROLES[role]: cap for role, cap in caps.items()}


def build_input(settings: Settings, **o: Any) -> TournamentInput:
    """The workflow input from ``ponder think`` options; refuses what preflight refuses."""
    # Keys matter where calls are made: here in embedded mode, not for a dry run or a cluster.
    keys_here = not (settings.temporal_address or o["dry_run"])
    provider = o["provider"]
    base = o["model"] or (default_model_for(provider, settings) if provider else None)
    judges = model_list(o["judges"]) or None
    if judges and o["judge_model"]:
        raise ConfigError(
            "option.invalid", "give --judges (a panel) or --judge-model (one judge), not both"
        )
    models = RoleModels(
        generate=base,
        judge=None if judges else o["judge_model"] or base,
        mutate=o["mutator_model"] or base,
        finalize=o["finalizer_model"],
    )
    default = base or TournamentInput.model_fields["model"].default
    in_use = [m or default for m in (models.generate, models.judge, models.mutate)]
    in_use += [models.finalize] if models.finalize else []
    in_use += judges or []
    for spec in in_use:
        resolve_model(spec, settings, require_key=keys_here)
    budget_output_tokens, output_caps = _output_tokens(o["max_output_tokens"])
    caps = role_values("--output-token-caps", o["output_token_caps"], TOKEN_ROLES, int)
    output_caps |= {TOKEN_ROLES[role]: cap for role, cap in caps.items()}
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
        rounds=o["rounds"],
        concurrency=concurrency_values(o["concurrency"]),
        seed=o["seed"],
        run_id=o["run_id"],
        include_raw_outputs=o["include_raw_outputs"],
        include_prompts=o["include_prompts"],
        invalid_json_retries=o["invalid_json_retries"],
        on_budget_exhausted=o["on_budget_exhausted"],
        critique_chars=o["critique_chars"],
        output_token_caps=output_caps,
        judge_orders=o["judge_orders"],
        judges=judges,
        bootstrap_resamples=o["bootstrap_resamples"],
        write_interval_s=o["write_interval_s"],
        length_control=o["length_control"],
        weight_by_confidence=o["weight_by_confidence"],
        # An adaptive phase spends 30% of its k-regular pairs unless --m sizes it by hand.
        adaptive_share=1.0 if o["m"] is not None and o["schedule"] == "adaptive" else None,
    )
    preflight(payload)  # a TournamentError: coded, one line (client.failures)
    return payload


def build_rank_input(
    settings: Settings,
    files: tuple[str, ...],
    *,
    task: str,
    rubric: str | None,
    model: str | None,
    mode: RankMode,
    rank_k: int | None,
    rank_seed: int | None,
    rank_max_calls: int | None,
    max_calls: int | None,
    seed: int | None,
    run_id: str,
    given: list[GivenCandidate] | None = None,
    judges: list[str] | None = None,
    judge_orders: JudgeOrders | None = None,
    length_control: bool = False,
    weight_by_confidence: bool = False,
) -> TournamentInput:
    """The workflow input that ranks ``files`` (or the ``given`` texts, for the MCP server);
    refuses what preflight refuses."""
    if given is None:
        if len(files) < 2:
            raise ConfigError(
                "option.missing",
                f"rank needs at least two candidate files to compare (got {len(files)}): "
                "give two or more files",
            )
        given = [GivenCandidate(id=Path(name).stem, text=read_file(name)) for name in files]
    if judges and model:
        raise ConfigError(
            "option.invalid", "give --judges (a panel) or --model (one judge), not both"
        )
    judge = model or TournamentInput.model_fields["model"].default
    in_use = judges or [judge]
    keys_here = not settings.temporal_address
    for spec in in_use:
        resolve_model(spec, settings, require_key=keys_here)
    # Without its own cap the rank block may use the whole call budget.
    cap = rank_max_calls if rank_max_calls is not None else max_calls
    block = rank_block(len(given), mode, k=rank_k, seed=rank_seed, max_calls=cap)
    payload = TournamentInput(
        task=read_task(task),
        rubric=rubric,
        custom=rank_profile(len(given)),
        model=judge,
        rank=block,
        budget=BudgetLimits(max_calls=max_calls),
        seed=seed,
        run_id=run_id,
        candidates=given,
        prices=price_table(in_use, settings, require_key=keys_here),
        judges=judges,
        judge_orders=judge_orders or TournamentInput.model_fields["judge_orders"].default,
        length_control=length_control,
        weight_by_confidence=weight_by_confidence,
    )
    preflight(payload)  # a TournamentError: coded, one line (client.failures)
    return payload


def build_mutate_input(
    settings: Settings,
    candidate: str,
    *,
    task: str,
    critique: str,
    rubric: str | None,
    model: str | None,
    prompt_style: str,
    seed: int,
    run_id: str,
) -> AskInput:
    """The Ask input of one mutate call (the CLI's and the MCP server's)."""
    from workflows.ask_types import AskInput
    from workflows.tournament.prompt_sizes import PROMPT_CEILING_CHARS
    from workflows.tournament.prompts import DEFAULT_RUBRIC, render

    mutator = model or TournamentInput.model_fields["model"].default
    resolve_model(mutator, settings, require_key=not settings.temporal_address)
    prompt = render(
        "mutate",
        {
            "task": task,
            "rubric": rubric or DEFAULT_RUBRIC,
            "candidate": candidate,
            "critique": critique,
        },
        style=prompt_style,  # type: ignore[arg-type]
    )
    size = len(prompt.system) + len(prompt.user)
    if size > PROMPT_CEILING_CHARS:
        # The built-in template names each variable once, so this is the texts' own length.
        raise ConfigError(
            "input.invalid",
            f"the mutate prompt is {size:,} characters, over the ceiling of "
            f"{PROMPT_CEILING_CHARS:,} characters per prompt: shorten the task, the candidate "
            "or the critique",
        )
    return AskInput(
        question=prompt.user,
        system=prompt.system,
        model=mutator,
        role="mutate",
        seed=seed,
        max_output_tokens=prompt.max_output_tokens,
        run_id=run_id,
    )
