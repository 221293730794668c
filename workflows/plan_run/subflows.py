"""Sub-flows (docs/plans.md, "Sub-flows and nested budgets"): a ``run`` step walks ``flows[NAME]``'s
body inline.

    render ``with`` over the caller's scope, check it against the flow's input contract
    (``malformed-output``) -> ``subflow.started`` -> walk the body in its own scope, each
    child a boundary of its own, scoped ``<run step>/<child>`` -> the body's output, checked
    by the run step's ``out``, then its ``ensure`` (never retried: a run step is never
    re-run) -> ``subflow.settled``: the run step's output

A ``run`` step is not a boundary: it reserves nothing itself; its children reserve in its
ledger (``budget``), then the run's. A child failure ends the body and fails the run step with
the child's reason (``subflow.failed``; the scoped child id in the message), routed by the run
step's ``on_fail``, else the run fails so. A failure of the run's own ledger or arithmetic
(``RUN_LEVEL``) fails the run whatever the routes. Bodies run one boundary at a time; under
the plan's ``concurrency`` a ``run`` step runs beside other steps, its children joining the
reservation they share (``overlap``), and behind ``plan-concurrent-bodies`` a body's
independent children run beside each other, as the reference runs sub-flows concurrently.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activation import with_strings
    from workflows.plan.boundaries import Boundary
    from workflows.plan.contracts import check_output, check_record
    from workflows.plan.flows import check_with, flow_output, input_fields, render_with
    from workflows.plan.model import RunStep
    from workflows.plan.predicates import AttemptScope, result_of
    from workflows.plan.reasons import RUN_LEVEL, Reason
    from workflows.plan.refs import RefError
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.checks import check_ensures
    from workflows.plan_run.dispatch import Dispatcher, left_the_recording
    from workflows.plan_run.routes import skipped_read
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.state import PlanRunState

__all__ = ["WalkBody", "run_subflow"]

WalkBody = Callable[[PlanRunState, Dispatcher, Scope, list[Boundary]], Awaitable[None]]


async def run_subflow(
    run: PlanRunState,
    dispatcher: Dispatcher,
    scope: Scope,
    step: RunStep,
    boundary: Boundary,
    walk_body: WalkBody,
) -> str | None:
    """Run the sub-flow; returns the step the walk jumps to (``on_fail``), or None."""
    sid = scope.sid(step.id)
    try:
        output = await _body(run, dispatcher, scope, step, boundary, walk_body)
    except PlanFailure as exc:
        run.record.steps[sid] = "failed"
        if step.on_fail is None or exc.reason in RUN_LEVEL or left_the_recording(exc):
            raise
        target = scope.sid(step.on_fail)
        run.record.event("step.failed", step=sid, reason=exc.reason, on_fail=target)
        run.on_fail_armed.add(target)
        run.control.routed_because[target] = f"step {sid} failed ({exc.reason}): {exc.detail}"
        return step.on_fail
    scope.settle(step.id, output)
    return None


async def _body(
    run: PlanRunState,
    dispatcher: Dispatcher,
    scope: Scope,
    step: RunStep,
    boundary: Boundary,
    walk_body: WalkBody,
) -> object:
    sid = scope.sid(step.id)
    plan = scope.plan
    flow = plan.flows[step.flow]
    fields = input_fields(flow, plan.contracts)
    try:
        values = render_with(
            step.with_,
            inputs=scope.inputs,
            outputs=scope.outputs,
            fields=fields,
            contracts=plan.contracts,
        )
    except RefError as exc:
        detail = skipped_read(run, scope, with_strings(step.with_)) or str(exc)
        raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}.with: {detail}", step=sid) from None
    problem = check_with(values, fields, plan.contracts)
    if problem is not None:
        raise PlanFailure(
            Reason.MALFORMED_OUTPUT,
            f"{sid}: with does not meet flow {step.flow!r}'s input: {problem}",
            step=sid,
        )
    run.record.steps[sid] = "running"
    started = run.record.event(
        "subflow.started",
        caused_by=run.record.causes([scope.sid(d) for d in step.deps]),
        step=sid,
        flow=step.flow,
        inputs=sorted(values),
    )
    body = Scope(
        run, plan, prefix=sid, inputs=values, steps={child.id: child for child in flow.steps}
    )
    for child in flow.steps:  # a re-run (after revise, or a route back) starts the body afresh
        run.record.steps[body.sid(child.id)] = "pending"
    try:
        await walk_body(run, dispatcher, body, list(boundary.children))
    except PlanFailure as exc:
        run.record.event(
            "subflow.failed",
            caused_by=[started],
            step=sid,
            flow=step.flow,
            child=exc.step,
            reason=exc.reason,
        )
        detail = exc.detail if exc.detail.startswith(sid) else f"{sid}: {exc.detail}"
        raise PlanFailure(exc.reason, detail, step=sid, cause=exc.cause) from None
    try:
        output = flow_output(flow, inputs=values, outputs=body.outputs)
    except RefError as exc:
        raise PlanFailure(
            Reason.MALFORMED_OUTPUT, f"{sid}: flow {step.flow!r}'s output: {exc}", step=sid
        ) from None
    if step.out is not None:
        if isinstance(output, str):
            _, problem = check_output(output, step.out, plan.contracts)
        elif isinstance(output, dict):
            problem = check_record(output, plan.contracts[step.out], plan.contracts, name=step.out)
        else:
            problem = f"contract {step.out}: expected an object, got {type(output).__name__}"
        if problem is not None:
            raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}: {problem}", step=sid)
    if step.ensure:
        await _ensure(dispatcher, scope, step, output)
    settled = run.record.event(
        "subflow.settled", caused_by=[started], step=sid, flow=step.flow, ok=True
    )
    run.record.last_settled[sid] = settled
    return output


async def _ensure(dispatcher: Dispatcher, scope: Scope, step: RunStep, output: object) -> None:
    """The run step's ensure predicates on the settled body's output (``result``), after
    ``out``; a run step is never re-run, so a failure is ``ensure-failed`` at once."""
    sid = scope.sid(step.id)
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    failed = await check_ensures(
        dispatcher,
        step,
        sid,
        output=text,
        result=result_of(step, output),
        scope=AttemptScope(scope.inputs, scope.outputs, prefix=scope.prefix),
    )
    if failed is not None:
        raise PlanFailure(
            Reason.ENSURE_FAILED,
            f"{sid}: ensure[{failed.index}] {failed.form} failed: {failed.reason} "
            "(a run step is never re-run: not retried)",
            step=sid,
        )
