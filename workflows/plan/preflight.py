"""The preflight refusals of a plan run (docs/plans.md), in their fixed order.

Pure: the workflow calls these in order and runs the one effect between them (the workspace
containment probe, an activity) itself. Each refusal is a ``PlanFailure`` with its reason.

1. ``trace-emit-required``: a ``loop-plan/1`` plan whose ``trace.emit`` is not true;
2. ``plan-model-unroutable``: a dispatching step no executor runs;
3. ``artifact-path-escapes-root``: (the probe) a declared path leaves the workspace;
4. ``same-family-qe-refused``: a ``role: qe`` step in the coder's family, unless waived loudly
   (a waiver owes a re-QE: ``reqe_debt``, written to the run directory);
5. ``reservation-unsatisfiable``: an explicit budget below the worst single boundary.
"""

from __future__ import annotations

import json

from workflows.plan.boundaries import boundaries, plan_totals, unsatisfiable
from workflows.plan.consumer import CONSUMER_MODEL
from workflows.plan.flows import invocations
from workflows.plan.ledger import PlanLedger
from workflows.plan.model import AgentStep, EnsureJudged, Plan, TournamentStep
from workflows.plan.predicates import judged_route_key
from workflows.plan.reasons import Reason
from workflows.plan.routing import route, step_family
from workflows.plan.run_record import PlanFailure
from workflows.plan.run_types import PlanRunInput

__all__ = [
    "REQE_DEBT_FILE",
    "check_trace",
    "declared_paths",
    "default_calls_differ",
    "open_ledger",
    "qe_unchecked",
    "qe_waivers",
    "reqe_debt",
    "route_models",
]


def check_trace(plan: Plan) -> None:
    if plan.loop_plan is not None and not plan.loop_plan.trace_emit:
        raise PlanFailure(
            Reason.TRACE_EMIT_REQUIRED,
            "this loop-plan/1 plan does not set trace.emit: true; fix: add trace: {emit: true}",
        )


def route_models(plan: Plan, input: PlanRunInput) -> dict[str, str]:
    """Step id -> the provider:model spec it runs on, resolved once for the whole run (a
    sub-flow child under its scoped id ``<run step>/<child>``, a tournament step's judge under
    ``<id>/judge``, a judged ensure's model under ``judged_route_key``: by default the
    step's)."""
    models: dict[str, str] = {}
    unroutable = []
    for sid, invoked in invocations(plan):
        if isinstance(invoked, AgentStep) and invoked.dispatch == "consumer":
            models[sid] = CONSUMER_MODEL  # an external client executes it: nothing to route
            continue
        spec = route(
            invoked.model,
            invoked.family,
            executors=input.executors,
            default_family=input.default_family,
        )
        if spec is None:
            unroutable.append(f"{sid} (model {invoked.model or '(none)'})")
        else:
            models[sid] = spec
        judged = invoked.ensure if isinstance(invoked, AgentStep) else []
        for k, predicate in enumerate(judged):
            if not isinstance(predicate, EnsureJudged):
                continue
            model = predicate.judged.model
            judge = spec
            if model is not None:
                judge = route(
                    model, None, executors=input.executors, default_family=input.default_family
                )
                if judge is None:
                    unroutable.append(f"{sid} ensure[{k}] judged (model {model})")
            if judge is not None:
                models[judged_route_key(sid, k)] = judge
    for step in plan.steps:
        if isinstance(step, TournamentStep):
            spec = route(
                step.model, None, executors=input.executors, default_family=input.default_family
            )
            judge = step.tournament.judge_model
            judge_spec = None
            if judge is not None:
                judge_spec = route(
                    judge, None, executors=input.executors, default_family=input.default_family
                )
            if spec is None or (judge is not None and judge_spec is None):
                unroutable.append(f"{step.id} (model {step.model or '(none)'}, judge {judge})")
            else:
                models[step.id] = spec
                if judge_spec is not None:
                    models[f"{step.id}/judge"] = judge_spec
    if unroutable:
        raise PlanFailure(
            Reason.PLAN_MODEL_UNROUTABLE,
            "no executor for: " + ", ".join(unroutable) + "; fix: give the step a "
            "provider:model, or --executor FAMILY=SPEC / --default-family",
        )
    return models


def declared_paths(plan: Plan) -> list[str]:
    return sorted(
        {p for _, s in invocations(plan) for p in (*s.artifacts.reads, *s.artifacts.writes)}
    )


REQE_DEBT_FILE = "reqe-due.json"
"""The run directory's record of the re-QE a waiver owes (the reference writes ``reqe-due-1``
to its state directory; a run writes only its own directory)."""


def qe_unchecked(plan: Plan, input: PlanRunInput) -> list[str]:
    """The ``role: qe`` steps nobody can check: the run was not told who wrote the code."""
    if input.coder_family:
        return []
    return [sid for sid, step in invocations(plan) if step.role == "qe"]


def reqe_debt(
    *, run_id: str, plan: str, coder_family: str, steps: list[str], emitted_at: str
) -> str:
    """The re-QE debt record of the steps run under ``--allow-same-family-qe`` (JSON)."""
    record = {
        "schema": "ponder-reqe-due/1",
        "run_id": run_id,
        "plan": plan,
        "coder_family": coder_family,
        "qe_family": coder_family,  # that identity is the waiver
        "steps": steps,
        "reason": f"plan run {run_id}: QE step(s) {', '.join(steps)} ran in the coder's family "
        f"{coder_family} under --allow-same-family-qe; an independent review is owed",
        "emitted_at": emitted_at,
    }
    return json.dumps(record, indent=2) + "\n"


def qe_waivers(plan: Plan, models: dict[str, str], input: PlanRunInput) -> list[tuple[str, str]]:
    """(step, waiver) for each QE step in the coder's family that the run waives."""
    coder = input.coder_family
    waivers = []
    for sid, step in invocations(plan):
        if not (step.role == "qe" and coder):
            continue
        if step_family(step.model, models[sid], step.family) != coder:
            continue
        message = (
            f"QE step {sid!r} runs in the coder's family {coder!r}: its review is not independent"
        )
        if not input.allow_same_family_qe:
            raise PlanFailure(
                Reason.SAME_FAMILY_QE_REFUSED,
                message + "; fix: give it another family, or --allow-same-family-qe",
            )
        waivers.append(
            (sid, f"WAIVER (--allow-same-family-qe): {message}; a re-QE is owed ({REQE_DEBT_FILE})")
        )
    return waivers


def default_calls_differ(plan: Plan) -> bool:
    """Whether the default call budget is a per-item one that the reference's rule (a chain
    member once) would set lower: only then does the workflow ask which rule its history
    ran with."""
    walk = boundaries(plan)
    per_item = plan_totals(plan, walk)
    return per_item.default_calls != plan_totals(plan, walk, per_item=False).default_calls


def open_ledger(plan: Plan, input: PlanRunInput, *, per_item: bool = True) -> PlanLedger:
    """The run's ledger; refused when an explicit budget cannot fit the worst boundary."""
    walk = boundaries(plan)
    override, declared = input.budget, plan.budget
    calls = override.calls if override else None
    wall = override.wall_ms if override else None
    bad = unsatisfiable(
        walk,
        calls=calls if calls is not None else (declared.calls if declared else None),
        wall_ms=wall if wall is not None else (declared.wall_ms if declared else None),
    )
    if bad is not None:
        raise PlanFailure(Reason.RESERVATION_UNSATISFIABLE, bad[1])
    return PlanLedger.start(
        plan_totals(plan, walk, per_item=per_item),
        calls=calls,
        wall_ms=wall,
        tokens=override.tokens if override else None,
        usd=override.usd if override and override.usd else (declared.usd if declared else None),
    )
