"""Route activation from workflow code: whether the walk runs a boundary, skips it, or leaves it
stranded (the rule is ``workflows.plan.activation``'s), the routes a decided human gate arms,
and a step's ``when`` (evaluated once its deps let it run: false skips that step alone, and
what depends on it still runs; an untaken route's skip carries on to its dependents).

Armed route targets share ``on_fail_armed`` with ``on_fail``'s, so a checkpoint's snapshot and
a revert carry them as they do the others.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activation import (
        KILL,
        Verdict,
        gate_route_targets,
        stranded_detail,
        verdict,
    )
    from workflows.plan.boundaries import Boundary
    from workflows.plan.model import GateStep
    from workflows.plan.predicates import AttemptScope, bindings
    from workflows.plan.reasons import Reason
    from workflows.plan.refs import Ref, RefError, parse_template
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.checks import evaluate
    from workflows.plan_run.dispatch import Dispatcher
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.state import PlanRunState

__all__ = ["arm", "condition", "decide", "not_run", "skipped_read", "stranded_failure"]

WHEN_NAMES = {"input", "steps"}


def decide(
    run: PlanRunState, scope: Scope, boundary: Boundary, routers: dict[str, set[str]]
) -> Verdict:
    step = scope.step(boundary.step_id)
    near = [*step.deps, *routers.get(step.id, ())]
    return verdict(
        step,
        armed=scope.sid(step.id) in run.on_fail_armed,
        routers=routers,
        states={d: run.record.steps.get(scope.sid(d), "pending") for d in near},
        outputs={d: scope.outputs.get(d) for d in near},
        gates={d: g for d in near if _is_human_gate(g := scope.step(d))},
        local={d for d in near if scope.sid(d) in run.when_skipped},
    )


def _is_human_gate(step: object) -> bool:
    return isinstance(step, GateStep) and step.is_human()


def not_run(
    run: PlanRunState,
    scope: Scope,
    boundary: Boundary,
    decided: Verdict,
    stranded: dict[str, str | None],
) -> None:
    """A skipped boundary is marked so with all it holds (a region's members, a body's
    children); a stranded one stays pending, and the walk's end names it."""
    sid = scope.sid(boundary.step_id)
    kind = "step.skipped" if decided.action == "skip" else "step.stranded"
    run.record.event(kind, step=sid, because=decided.because)
    if decided.action == "strand":
        stranded[sid] = decided.because
        run.record.steps[sid] = "pending"
        return
    stranded.pop(sid, None)
    for held in _held(scope, boundary):
        run.record.steps[held] = "skipped"
        # Set or cleared each time: a revise or a revert walks a step again, and its skip may
        # then be of the other kind.
        if decided.local:
            run.when_skipped.add(held)
        else:
            run.when_skipped.discard(held)


def _held(scope: Scope, boundary: Boundary) -> list[str]:
    """The scoped ids a boundary stands for: itself, its region's members, its body's
    children (and theirs)."""
    sid = scope.sid(boundary.step_id)
    out = [sid, *(scope.sid(m) for m in boundary.members if m != boundary.step_id)]
    stack = [(sid, child) for child in boundary.children]
    while stack:
        prefix, child = stack.pop()
        child_sid = f"{prefix}/{child.step_id}"
        out.append(child_sid)
        out += [f"{prefix}/{m}" for m in child.members if m != child.step_id]
        stack += [(child_sid, grandchild) for grandchild in child.children]
    return out


def arm(run: PlanRunState, scope: Scope, boundary: Boundary) -> None:
    """A decided human gate arms the target of the route it took and disarms the other (a
    gate decided again after a revise may choose differently)."""
    step = scope.step(boundary.step_id)
    on_approve, on_kill = gate_route_targets(step)
    if on_approve is None and on_kill is None:
        return
    decision = scope.outputs.get(step.id)
    if run.record.steps.get(scope.sid(step.id)) != "settled":
        return
    for target in (on_approve, on_kill):
        if target is not None:
            run.on_fail_armed.discard(scope.sid(target))
    chosen = on_approve if decision == "approve" else on_kill if decision == KILL else None
    if chosen is not None:
        run.on_fail_armed.add(scope.sid(chosen))


def stranded_failure(
    run: PlanRunState, scope: Scope, steps: list[Boundary], stranded: dict[str, str | None]
) -> PlanFailure | None:
    """``steps-stranded`` naming the scope's boundaries still pending once its walk ended."""
    left = [
        (scope.sid(b.step_id), stranded.get(scope.sid(b.step_id)))
        for b in steps
        if run.record.steps.get(scope.sid(b.step_id)) == "pending"
    ]
    if not left:
        return None
    return PlanFailure(Reason.STEPS_STRANDED, stranded_detail(left), step=left[0][0])


async def condition(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, boundary: Boundary
) -> Verdict:
    """A step's ``when`` over its scope's input and outputs: true (or none) runs it, false
    skips it (a local skip: its dependents are not skipped for it). A value that is not a
    boolean, or an evaluation error, fails the step ``expr-failed``: a condition that cannot
    be read decides nothing."""
    step = scope.step(boundary.step_id)
    text: str | None = getattr(step, "when", None)
    if text is None:
        return Verdict("run")
    sid = scope.sid(step.id)
    where = AttemptScope(scope.inputs, scope.outputs, prefix=scope.prefix)
    values = bindings([text], plan=dispatcher.plan, scope=where, names=WHEN_NAMES)
    (outcome,) = await evaluate([text], values, step=sid)
    if outcome.ok and isinstance(outcome.value, bool):
        run.record.event("when.evaluated", step=sid, holds=outcome.value)
        if outcome.value:
            return Verdict("run")
        return Verdict("skip", f"when {text} is false", local=True)
    error = outcome.error if not outcome.ok else f"gave {_json_kind(outcome.value)}, not a boolean"
    run.record.steps[sid] = "failed"
    run.record.event("when.evaluated", step=sid, error=error)
    raise PlanFailure(
        Reason.EXPR_FAILED,
        f"{sid}.when = {text}: {error}; fix: make it a boolean over outputs that exist when the "
        "step runs (e.g. compare with ==)",
        step=sid,
    )


def skipped_read(run: PlanRunState, scope: Scope, texts: list[str]) -> str | None:
    """Why a reference in ``texts`` (a ``with`` value, a fan-out's ``over``) has no output
    when it names a step that was skipped, else None: a false ``when`` skips only its own
    step, so a step after it may run and read it."""
    for text in texts:
        try:
            segments = parse_template(text)
        except RefError:
            continue  # the template itself is what failed: its own message says so
        for ref in segments:
            if not isinstance(ref, Ref) or ref.source != "steps" or ref.name in scope.outputs:
                continue
            sid = scope.sid(ref.name)
            if run.record.steps.get(sid) != "skipped":
                continue
            when = getattr(scope.step(ref.name), "when", None) if sid in run.when_skipped else None
            why = f"when: {when} was false" if when is not None else "it did not run"
            return (
                f"step {sid!r} was skipped ({why}), so {ref.text()} has no output; fix: give "
                f"this step a when that is false whenever {sid!r} is skipped, or read a step "
                "that always runs"
            )
    return None


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    return {str: "a string", int: "a number", float: "a number", list: "a list", dict: "a map"}.get(
        type(value), type(value).__name__
    )
