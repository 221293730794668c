"""``kind: set`` (docs/plans.md, "Expressions, ensure, iterate and set"): computed values, no
reservation, no dispatch.

Workflow code. One ``evaluate_cel`` local activity evaluates every key over ``input`` and
``steps`` into a map, the step's output (``${steps.<id>.output.<KEY>}`` in prompts,
``steps["<id>"].KEY`` in CEL); then ``out`` checks the map, then ``ensure`` (``result`` = the
map). Deterministic, so never retried: the first failing key fails ``expr-failed`` (run-fatal),
a contract ``malformed-output``, a predicate ``ensure-failed``. On replay the marker answers:
nothing is evaluated again.
"""

from __future__ import annotations

import json

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.contracts import check_output
    from workflows.plan.expression_rules import bound_names
    from workflows.plan.model import SetStep
    from workflows.plan.predicates import AttemptScope, bindings
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.checks import check_ensures, evaluate
    from workflows.plan_run.dispatch import Dispatcher
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.state import PlanRunState

__all__ = ["set_step"]


async def set_step(run: PlanRunState, dispatcher: Dispatcher, where: Scope, step: SetStep) -> None:
    """Evaluate, check and settle ``step`` in ``where`` (the top level, or a sub-flow body)."""
    plan = dispatcher.plan
    sid = where.sid(step.id)
    scope = AttemptScope(where.inputs, where.outputs, prefix=where.prefix)
    keys = list(step.values)
    texts = [step.values[k] for k in keys]
    names = bound_names(step, member=False, result=False)
    values = bindings(texts, plan=plan, scope=scope, names=names)
    run.record.steps[sid] = "running"
    outcomes = await evaluate(texts, values, step=sid)
    output = {}
    for key, outcome in zip(keys, outcomes, strict=True):
        if not outcome.ok:
            run.record.steps[sid] = "failed"
            run.record.event("set.evaluated", step=sid, ok=False, key=key, error=outcome.error)
            raise PlanFailure(
                Reason.EXPR_FAILED,
                f"{sid}: set.{key} = {step.values[key]}: {outcome.error}",
                step=sid,
            )
        output[key] = outcome.value
    run.record.event("set.evaluated", step=sid, ok=True, keys=keys)
    if step.out is not None:
        _, problem = check_output(json.dumps(output), step.out, plan.contracts)
        if problem is not None:
            run.record.steps[sid] = "failed"
            raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}: {problem}", step=sid)
    if step.ensure:
        failed = await check_ensures(
            dispatcher, step, sid, output=json.dumps(output), result=output, scope=scope
        )
        if failed is not None:
            run.record.steps[sid] = "failed"
            raise PlanFailure(
                Reason.ENSURE_FAILED,
                f"{sid}: ensure[{failed.index}] {failed.form} failed: {failed.reason} "
                "(a set step is deterministic: never retried)",
                step=sid,
            )
    where.settle(step.id, output)
    run.settle_by_message(sid, [where.sid(d) for d in step.deps], keys=keys)
