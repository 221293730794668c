"""One boundary of the walk (docs/plans.md), as the plan-order walk runs it: the run's part of
``walk``, which decides what runs and when.

    pause -> ``pauses`` | human gate -> ``gates`` | ``run`` step -> ``subflows`` (its body walked
    by the walk it is given) | set -> ``set_steps``
    else: the nested ledgers (``Ledgers.for_boundary``) refuse at once, or the run's ledger
    reserves the worst case (``reserve_worst_case``: waits ``awaiting_budget`` for an extension;
    in a body beside other steps, it joins their shared reservation, ``overlap``) -> the agent
    step | model gate | region | tournament -> its wall clock spent, the reservation closed

A failed agent step routes to its ``on_fail`` (``route_failure``), else the failure is raised.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.boundaries import Boundary, Reservation, region_reservation
    from workflows.plan.model import (
        AgentStep,
        FanoutStep,
        GateStep,
        PauseStep,
        RunStep,
        SetStep,
        TournamentStep,
    )
    from workflows.plan.reasons import RUN_FATAL, Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.child import run_tournament
    from workflows.plan_run.dispatch import Dispatcher, budget_failure, left_the_recording
    from workflows.plan_run.gates import human_gate, model_gate
    from workflows.plan_run.pauses import pause
    from workflows.plan_run.regions import region, region_items
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.set_steps import set_step
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.subflows import WalkBody, run_subflow
    from workflows.plan_run.waits import wait_for_person

__all__ = [
    "reserve_worst_case",
    "route_failure",
    "run_agent",
    "run_boundary",
    "run_tournament_step",
]


async def run_boundary(
    run: PlanRunState,
    dispatcher: Dispatcher,
    scope: Scope,
    boundary: Boundary,
    walk_body: WalkBody,
) -> str | None:
    """Run one boundary; returns the step id the walk jumps to, or None to go on."""
    sid = scope.sid(boundary.step_id)
    run.current = sid
    step = scope.step(boundary.step_id)
    plan = scope.plan
    if isinstance(step, PauseStep):
        await pause(run, step)
        return None
    if isinstance(step, GateStep) and step.is_human():
        return await human_gate(run, scope, step)
    if isinstance(step, RunStep):
        return await run_subflow(run, dispatcher, scope, step, boundary, walk_body)
    if isinstance(step, SetStep):
        await set_step(run, dispatcher, scope, step)
        return None
    reservation = boundary.reservation
    items: list[Any] = []
    if isinstance(step, FanoutStep):
        items = region_items(run, step)
        chain = [plan.step(m) for m in step.fanout.chain]
        reservation = region_reservation(step, chain, len(items))  # type: ignore[arg-type]
    checks, holds = dispatcher.ledgers.for_boundary(sid, scope.prefix, step, reservation)
    exhausted = dispatcher.ledgers.check(checks)
    if exhausted is not None:
        failure = budget_failure(run.record, exhausted, sid)
        if isinstance(step, AgentStep) and exhausted.scope == "step" and exhausted.owner == sid:
            return route_failure(run, scope, step, failure)
        run.record.steps[sid] = "failed"
        raise failure
    ledger, pool = dispatcher.ledger, scope.pool
    if pool is None:
        await reserve_worst_case(run, sid, reservation)
        ledger.open(sid, reservation)
    else:  # a body beside other steps: join the reservation they share
        await pool.enter(sid, reservation, lambda: reserve_worst_case(run, sid, reservation))
    held = dispatcher.ledgers.hold(holds)
    started = workflow.now()
    closed = False
    try:
        if isinstance(step, AgentStep):
            return await run_agent(run, dispatcher, scope, step)
        if isinstance(step, GateStep):
            await model_gate(run, dispatcher, scope, step)
        elif isinstance(step, FanoutStep):
            await region(run, dispatcher, plan, step, items)
        elif isinstance(step, TournamentStep):
            await run_tournament_step(run, dispatcher, step, reservation)
        return None
    except GeneratorExit:
        # The coroutine is closed: evicted, or collected after its worker stopped. The run's
        # state goes with it, and outside an activation workflow.now() raises (seen raised by
        # the garbage collector in the middle of another import, which Python 3.11's import
        # lock does not survive: a test's worker failed to start with a KeyError).
        closed = True
        raise
    finally:
        if not closed:
            if pool is None:
                elapsed = workflow.now() - started
                ledger.spend_wall(int(elapsed.total_seconds() * 1000))
                ledger.close()
            else:
                pool.leave()  # the pool charges its wall clock once the last one leaves
            dispatcher.ledgers.release(held)


async def run_tournament_step(
    run: PlanRunState, dispatcher: Dispatcher, step: TournamentStep, reservation: Reservation
) -> None:
    """A tournament step (the top level's only): the child capped at its reserved calls."""
    output = await run_tournament(
        dispatcher, step, max_calls=reservation.invocations, inputs=run.args, outputs=run.outputs
    )
    run.settle(step.id, output)


async def run_agent(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, step: AgentStep
) -> str | None:
    """An agent step; a failure with an ``on_fail`` route arms that step and jumps to it."""
    try:
        output = await dispatcher.invoke(
            step, inputs=scope.inputs, outputs=scope.outputs, scope=scope.prefix
        )
    except PlanFailure as exc:
        return route_failure(run, scope, step, exc)
    scope.settle(step.id, output)
    return None


def route_failure(run: PlanRunState, scope: Scope, step: AgentStep, exc: PlanFailure) -> str:
    """Route a failed agent step to its ``on_fail`` (within its scope), or raise. A run-level
    failure, and a sub-flow's own ledger running out, are never the step's to route."""
    sid = scope.sid(step.id)
    run.record.steps[sid] = "failed"
    if (
        step.on_fail is None
        or exc.reason in RUN_FATAL
        or exc.reason == Reason.SUBFLOW_BUDGET_EXHAUSTED
        or left_the_recording(exc)
    ):
        raise exc
    target = scope.sid(step.on_fail)
    run.record.event("step.failed", step=sid, reason=exc.reason, on_fail=target)
    run.on_fail_armed.add(target)
    run.control.routed_because[target] = f"step {sid} failed ({exc.reason}): {exc.detail}"
    return step.on_fail


async def reserve_worst_case(run: PlanRunState, step_id: str, res: Reservation) -> None:
    """Wait until the boundary's worst case fits the budget; past the extension cap it never
    can, so the run fails instead of waiting forever."""
    ledger = run.ledger
    assert ledger is not None
    need = ledger.need(step_id, res)
    if need is None:
        return
    if ledger.budget.spent.calls + res.invocations > ledger.calls_cap:
        raise PlanFailure(
            Reason.BUDGET_EXTENSION_EXHAUSTED,
            f"step {step_id!r} needs {res.invocations} more invocation(s); no extension "
            f"may pass the cap of {ledger.calls_cap}",
        )
    if ledger.wall_spent_ms + res.wall_ms > ledger.wall_cap_ms:
        raise PlanFailure(
            Reason.WALL_EXTENSION_EXHAUSTED,
            f"step {step_id!r} needs {res.wall_ms} ms more; no extension may pass the cap "
            f"of {ledger.wall_cap_ms} ms",
        )
    run.need = need.detail
    run.record.event("paused", step=step_id, state=need.state, need=need.detail)
    waited_ms = await wait_for_person(
        run, need.state, need.reason, lambda: ledger.need(step_id, res) is None
    )
    run.need = None
    limits = run.budget_status().model_dump()
    run.record.event("resumed", step=step_id, limits=limits, waited_ms=waited_ms)
