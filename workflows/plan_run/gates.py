"""Gates (docs/plans.md).

A **model gate** is an invocation whose own output carries the verdict: PASS continues; FAIL or
unparseable re-runs the route step and then the gate while redos are left; a ``terminal:`` route
ends the run completed with that route.

A **human gate** waits ``awaiting_gate`` for ``resolve_gate(step, decision, token)``: approve
routes to ``on_approve``, kill to ``on_kill`` (or fails ``gate-killed``), revise resets the target
and everything downstream within ``max_rounds`` (the epoch bumps, so tokens rotate). A gate
with a ``deadline`` or ``escalate`` waits on timers (``deadlines``): its default decides as a
person would, except that a default kill with no ``on_kill`` fails ``gate-deadline-expired``.
Either gate may sit in a sub-flow's body; its routes stay within the body.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.boundaries import downstream_of
    from workflows.plan.deadlines import schedule
    from workflows.plan.gates import gate_verdict
    from workflows.plan.model import AgentStep, GateStep
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure, TerminalRoute
    from workflows.plan.run_types import PendingGate
    from workflows.plan_run.deadlines import open_timed_gate, wait_with_timers
    from workflows.plan_run.dispatch import Dispatcher, Redo
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.waits import wait_for_person

__all__ = ["TERMINAL_ON_UNPARSEABLE_PATCH", "human_gate", "model_gate"]

TERMINAL_ON_UNPARSEABLE_PATCH = "plan-terminal-route-on-unparseable"


def _unparseable_routes() -> bool:
    """An unparseable verdict takes the terminal route too (histories from before the rule
    failed ``gate-verdict-unparseable`` there, and replay so)."""
    return workflow.patched(TERMINAL_ON_UNPARSEABLE_PATCH)


async def model_gate(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, gate: GateStep
) -> None:
    """A model gate at the top level or in a sub-flow's body (``scope``: its route is a
    sibling there, and everything it records names it by its scoped id)."""
    redos = 0
    route_to = gate.fail_route
    terminal = route_to is not None and route_to.startswith("terminal:")
    sid = scope.sid(gate.id)
    while True:
        text = await dispatcher.invoke(
            gate, inputs=scope.inputs, outputs=scope.outputs, scope=scope.prefix
        )
        verdict = gate_verdict(text)
        run.record.event("gate.verdict", step=sid, verdict=verdict, redo=redos)
        scope.outputs[gate.id] = text
        if verdict == "pass":
            scope.settle(gate.id, text)
            return
        if route_to and terminal and (verdict == "fail" or _unparseable_routes()):
            # Any non-PASS verdict takes a terminal route, as in the reference: the plan said
            # where a failing gate goes, and an unparseable verdict is not a pass.
            scope.settle(gate.id, text)
            raise TerminalRoute(route_to.removeprefix("terminal:"))
        if redos < gate.max_redos and route_to and not terminal:
            redos += 1
            run.record.event("gate.redo", step=sid, route=scope.sid(route_to), redo=redos)
            target = scope.step(route_to)
            assert isinstance(target, AgentStep)
            # The route step re-runs with its own previous output as the upstream value (as
            # in the reference), so the redo sees what the gate failed.
            output = await dispatcher.invoke(
                target,
                inputs=scope.inputs,
                outputs=scope.outputs,
                scope=scope.prefix,
                redo=Redo(gate=sid, previous=scope.outputs.get(target.id)),
            )
            scope.settle(target.id, output)
            continue
        run.record.steps[sid] = "failed"
        if verdict == "fail":
            raise PlanFailure(
                Reason.GATE_FAILED, f"gate {sid!r} failed after {redos} redo(s)", step=sid
            )
        raise PlanFailure(
            Reason.GATE_VERDICT_UNPARSEABLE,
            f"gate {sid!r}: the output does not end with exactly one line "
            f"'GATE: PASS' or 'GATE: FAIL' (after {redos} redo(s))",
            step=sid,
        )


async def human_gate(run: PlanRunState, scope: Scope, step: GateStep) -> str | None:
    """Wait for the decision; returns the step id the walk jumps to (in ``scope``), or None to
    go on. In a sub-flow's body the gate is known by its scoped id (``<run step>/<gate>``):
    status shows it so, ``resolve_gate`` names it so, and a revise resets within the body."""
    gate = step.gate
    assert gate is not None
    plan = scope.plan
    sid = scope.sid(step.id)
    rounds = run.rounds.get(sid, 0)
    token = f"{run.epoch}-{workflow.uuid4().hex[:12]}"
    pending = PendingGate(step=sid, token=token, round=rounds)
    timers = schedule(gate)
    opened = workflow.now()
    if timers.timed:
        pending = open_timed_gate(pending, step, timers, opened)
    run.gates[sid] = pending
    run.record.steps[sid] = "waiting"
    timed: dict[str, Any] = {}
    if timers.timed:
        timed = {"deadline_at": pending.deadline_at, "default": pending.default}
    run.record.event("gate.opened", step=sid, token=token, round=rounds, **timed)
    waited_ms = await wait_for_person(
        run,
        "awaiting_gate",
        Reason.GATE_PENDING,
        lambda: sid in run.decisions,
        wait=(lambda: wait_with_timers(run, sid, timers, pending, opened))
        if timers.timed
        else None,
    )
    decision = run.decisions.pop(sid)
    run.gates.pop(sid, None)
    by_deadline = run.expired_tokens.get(sid) == token
    by = run.deciders.pop(sid, None)
    decided: dict[str, Any] = {"decided_by": "deadline"} if by_deadline else {}
    if by is not None and not by_deadline:
        decided["decided_by"] = by  # a person who gave their name (the CLI: the local user)
    run.record.event(
        "gate.decided",
        step=sid,
        decision=decision,
        round=rounds,
        waited_ms=waited_ms,
        **decided,
    )
    scope.settle(step.id, decision)
    run.settle_by_message(sid, [scope.sid(d) for d in step.deps], decision=decision, **decided)
    if decision == "approve":
        return gate.on_approve
    if decision == "kill":
        if gate.on_kill is not None:
            return gate.on_kill
        run.record.steps[sid] = "failed"
        if by_deadline:
            raise PlanFailure(
                Reason.GATE_DEADLINE_EXPIRED,
                f"gate {sid!r}: nobody decided within {gate.deadline} ms; its default is "
                "kill and on_kill is null",
                step=sid,
            )
        raise PlanFailure(Reason.GATE_KILLED, f"gate {sid!r} was killed", step=sid)
    max_rounds = gate.max_rounds or plan.max_rounds or 0
    target = gate.on_revise
    if rounds >= max_rounds or target is None:
        run.record.steps[sid] = "failed"
        raise PlanFailure(
            Reason.GATE_ROUNDS_EXHAUSTED,
            f"gate {sid!r}: revise asked after {rounds} of {max_rounds} round(s)",
            step=sid,
        )
    run.rounds[sid] = rounds + 1
    run.epoch += 1
    before = dict(run.record.steps)
    _reset(run, scope, target)
    reset = [s for s, state in run.record.steps.items() if state != before.get(s)]
    renewed = run.ledgers.fresh(reset)  # the revised work starts over in fresh step ledgers
    extra: dict[str, Any] = {"ledgers_renewed": renewed} if renewed else {}
    run.record.event("gate.revise", step=sid, target=scope.sid(target), epoch=run.epoch, **extra)
    return target


def _reset(run: PlanRunState, scope: Scope, target: str) -> None:
    """Forget ``target`` and everything downstream of it in ``scope`` (a body's own steps)."""
    if scope.prefix is None:
        for reset in downstream_of(scope.plan, target):
            run.outputs.pop(reset, None)
            run.record.steps[reset] = "pending"
        return
    hit = {target}
    for child in scope.body():
        if child.id in hit or any(d in hit for d in child.deps):
            hit.add(child.id)
            scope.outputs.pop(child.id, None)
            run.outputs.pop(scope.sid(child.id), None)
            run.record.steps[scope.sid(child.id)] = "pending"
