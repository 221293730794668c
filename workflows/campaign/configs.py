"""A variant's config as the child workflow's input, and its worst-case calls.

Not pure: the tournament's input model imports activity types (provider defaults, prices), so
this module is kept apart from ``document.py``; it still imports no Temporal. The workflow's
preflight and ``ponder campaign validate`` both run :func:`config_errors`, so a document the
CLI accepts is one the workflow accepts.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from workflows.ask_types import AskInput
from workflows.budget import BudgetLimits
from workflows.call_options import CallOptions
from workflows.campaign.document import (
    CampaignDocument,
    JudgeScorer,
    PlanConfig,
    Scenario,
    SingleConfig,
    Variant,
    shape_errors,
)
from workflows.campaign.errors import CampaignError
from workflows.plan.boundaries import plan_totals
from workflows.plan.errors import join_path
from workflows.plan.run_types import PlanRunInput
from workflows.plan.validate import load_plan
from workflows.tournament.errors import TournamentError
from workflows.tournament.preflight import preflight
from workflows.tournament.prompts import DEFAULT_RUBRIC, RenderedPrompt, render
from workflows.tournament.types import TournamentInput

__all__ = [
    "ask_input",
    "cell_calls",
    "config_errors",
    "final_step",
    "plan_input",
    "prompt_hash",
    "tournament_input",
    "variant_models",
]


def tournament_input(
    variant: Variant,
    *,
    task: str,
    seed: int,
    run_id: str,
    max_calls: int | None = None,
    calls: CallOptions | None = None,
) -> TournamentInput:
    """The child tournament of a cell: the variant's config, the cell's task, seed and id."""
    fields: dict[str, Any] = {**variant.config, "task": task, "seed": seed, "run_id": run_id}
    if calls is not None:
        fields["calls"] = calls
    fields["on_budget_exhausted"] = "fail"  # the cell reserved its worst case; never pause
    if max_calls is not None:
        fields["budget"] = BudgetLimits(max_calls=max_calls)
    return TournamentInput.model_validate(fields)


def ask_input(
    variant: Variant, *, task: str, seed: int, run_id: str, calls: CallOptions | None = None
) -> AskInput:
    """The child ``Ask`` of a single-shot cell (the prompt style's generate prompt, if any)."""
    config = SingleConfig.model_validate(variant.config)
    question, system = task, config.system
    if config.prompt_style is not None:
        # The tournament's own generate prompt, so a single shot and a tournament in the same
        # style ask the same question.
        rendered = render(
            "generate", {"task": task, "rubric": DEFAULT_RUBRIC}, style=config.prompt_style
        )
        question, system = rendered.user, system if system is not None else rendered.system
    return AskInput(
        question=question,
        model=config.model,
        system=system,
        temperature=config.temperature,
        max_output_tokens=config.max_output_tokens,
        base_url=config.base_url,
        role="generate",
        seed=seed,
        run_id=run_id,
        calls=calls or CallOptions(),
    )


def plan_input(
    variant: Variant, *, task: str, seed: int, run_id: str, calls: CallOptions | None = None
) -> PlanRunInput:
    """The child ``PlanRun`` of a cell: the scenario's task is the run argument ``task``."""
    config = PlanConfig.model_validate(variant.config)
    assert isinstance(config.plan, dict)  # a path was inlined by the CLI or refused
    return PlanRunInput(
        plan=config.plan,
        args={"task": task, **config.args},
        seed=seed,
        run_id=run_id,
        calls=calls or CallOptions(),
    )


def prompt_hash(variant: Variant, *, task: str) -> str:
    """The sha256 of the effective prompt a cell of ``variant`` sends for ``task`` (its record's
    ``prompt_hash``), so two variants that ask differently hash differently:

    - single: the system and user message of its one call (a prompt style's generate prompt);
    - tournament: its generate prompt, the task and rubric substituted (a ``prompts.generate``
      override and the prompt style applied), which every first-generation call sends;
    - plan: its document and arguments (the task included), from which each step's prompt is
      rendered as the run goes.

    A single shot and a tournament in the same style ask the same question: the same hash.
    """
    if variant.kind == "plan":
        config = PlanConfig.model_validate(variant.config)
        blob = json.dumps(
            {"plan": config.plan, "args": {"task": task, **config.args}},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()
    if variant.kind == "single":
        # The seed, run id and output cap are placeholders the hash never sees.
        ask = ask_input(variant, task=task, seed=0, run_id="prompt-hash")  # pragma: no mutate
        sent = RenderedPrompt("generate", ask.system or "", ask.question, 0)  # pragma: no mutate
        return sent.sha256
    t = tournament_input(variant, task=task, seed=0, run_id="prompt-hash")  # pragma: no mutate
    override = t.prompts.generate if t.prompts else None
    values = {"task": t.task, "rubric": t.rubric or DEFAULT_RUBRIC}
    return render("generate", values, style=t.prompt_style, override=override).sha256


def final_step(variant: Variant) -> str:
    """The id of the plan's last top-level step: its output is the cell's answer."""
    config = PlanConfig.model_validate(variant.config)
    assert isinstance(config.plan, dict)
    return load_plan(config.plan).steps[-1].id


def _variant_calls(variant: Variant) -> int:
    if variant.kind == "plan":
        config = PlanConfig.model_validate(variant.config)
        assert isinstance(config.plan, dict)
        return plan_totals(load_plan(config.plan)).reserved_calls
    if variant.kind == "tournament":
        # A probe: its task, seed and run id change no count.
        probe = tournament_input(variant, task="probe", seed=0, run_id="probe")  # pragma: no mutate
        return preflight(probe).tournament.worst_case_calls
    return 1


def cell_calls(variant: Variant, scenario: Scenario) -> int:
    """The calls a cell may make at most: its variant's, plus one for a judge scorer."""
    return _variant_calls(variant) + int(isinstance(scenario.scorer, JudgeScorer))


def config_errors(doc: CampaignDocument) -> list[CampaignError]:
    """Tournament configs checked against the tournament's own input model and preflight."""
    errors: list[CampaignError] = []
    # Probed with the longest task the cells will send: a prompt's worst-case size grows with
    # it (``tournament.prompt_sizes``), and a cell refused only at its start would be refused
    # inside the campaign's workflow.
    task = max((s.task for s in doc.scenarios), key=len, default="probe")
    for i, variant in enumerate(doc.variants):
        if variant.kind != "tournament":
            continue
        path = join_path("variants", i, "config")
        try:
            # The seed and run id are placeholders no check reads.
            # pragma: no mutate block
            probe = tournament_input(variant, task=task, seed=0, run_id="probe")
        except ValidationError as exc:
            errors += shape_errors(exc, path)
            continue
        try:
            preflight(probe)
        except TournamentError as exc:
            errors.append(CampaignError("variant.config", path, f"{exc.code}: {exc.message}"))
    return errors


def variant_models(doc: CampaignDocument) -> list[tuple[str, str, str | None]]:
    """``(variant or scorer:<scenario>, model spec, base URL)`` of every model a campaign uses:
    what the route assertion checks and the forecast prices."""
    out: list[tuple[str, str, str | None]] = []
    # Each child input is a probe: its task, seed and run id name no model.
    for variant in doc.variants:
        if variant.kind == "single":
            config = ask_input(variant, task="probe", seed=0, run_id="probe")  # pragma: no mutate
            out.append((variant.id, config.model, config.base_url))
        elif variant.kind == "tournament":
            t = tournament_input(variant, task="probe", seed=0, run_id="probe")  # pragma: no mutate
            roles = [m for m in t.models.model_dump().values() if m]
            out += [(variant.id, model, None) for model in dict.fromkeys([t.model, *roles])]
        else:
            probe = plan_input(variant, task="probe", seed=0, run_id="probe")  # pragma: no mutate
            plan = probe.plan
            steps = plan.get("steps")
            for step in steps if isinstance(steps, list) else []:
                if not isinstance(step, dict):
                    continue
                # A tournament step's judge is a model of the plan too.
                spec = step.get("tournament")
                judge = spec.get("judge_model") if isinstance(spec, dict) else None
                for model in (step.get("model"), judge):
                    if isinstance(model, str):
                        out.append((variant.id, model, None))
    for scenario in doc.scenarios:
        if isinstance(scenario.scorer, JudgeScorer):
            out.append((f"scorer:{scenario.id}", scenario.scorer.model, None))
    return out
