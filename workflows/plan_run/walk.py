"""The boundary walk (docs/plans.md): boundaries in plan order, each reserving its worst case
before it runs; with the plan's ``concurrency`` above 1, the top level's independent agent and
set steps overlap (``overlap``), and so do its ``run`` steps, whose bodies' children then
join the reservation in flight; everything else runs as below.

    for each boundary, activation says whether it runs (``workflows.plan.activation``): a
    route target only once its route was taken, nothing behind a killed gate or a step an
    untaken route skipped, nothing whose ``when`` is false (evaluated once the rest says it
    may run; that skip is its own, a step after it still runs); one behind a failed step is
    stranded, and a walk that ends with stranded steps fails ``steps-stranded`` (histories
    from before the rule replay the plan-order walk, where an ``on_fail`` target runs only
    when a failure routed to it):
        pause -> ``pauses`` | human gate -> ``gates`` | set -> ``set_steps`` (none of them
        reserves: nothing is dispatched)
        run step -> ``subflows`` (not a boundary: its body walks here, each child a boundary)
        else: reserve innermost first -- the step's own ledger, a fan-out's, the enclosing
        sub-flow's (each fails its scope at once when it cannot fit), then the run's (wait
        ``awaiting_budget`` / ``awaiting_wall_clock`` for ``extend_budget`` when it does not
        fit) --, open the reservation, run it -- agent step | model gate | region |
        tournament -- spend its wall time, close it
        a route (``on_fail``, a gate decision) forward arms its target; one back (a
        revise, a gate routing to an earlier step) jumps the walk to that step
        a settled top-level step: its fingerprint; with ``checkpoint: LABEL``, a commit
        ``--from RUN:LABEL``: a step whose fingerprint matches is restored, not run
        a revert (``Reverted`` out of a wait): restore the snapshot, go on at its first
        unsettled step (``checkpoints``)
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activation import Verdict, forward_routers, has_conditions, has_routes
    from workflows.plan.boundaries import Boundary, Reservation, boundaries, region_reservation
    from workflows.plan.checkpoints import Reverted
    from workflows.plan.model import (
        AgentStep,
        FanoutStep,
        GateStep,
        PauseStep,
        Plan,
        RunStep,
        SetStep,
        TournamentStep,
    )
    from workflows.plan.reasons import RUN_FATAL, Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.checkpoints import apply_revert, commit, note_fingerprint, restore
    from workflows.plan_run.child import run_tournament
    from workflows.plan_run.dispatch import Dispatcher, budget_failure, left_the_recording
    from workflows.plan_run.gates import human_gate, model_gate
    from workflows.plan_run.overlap import (
        CONCURRENT_SUBFLOWS_PATCH,
        CONCURRENT_WALK_PATCH,
        Hooks,
        Overlap,
        walk_overlapping,
    )
    from workflows.plan_run.pauses import pause
    from workflows.plan_run.regions import region, region_items
    from workflows.plan_run.routes import arm, condition, decide, not_run, stranded_failure
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.set_steps import set_step
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.subflows import run_subflow
    from workflows.plan_run.waits import wait_for_person

__all__ = ["CONCURRENT_WALK_PATCH", "ROUTE_ACTIVATION_PATCH", "walk", "walk_scope"]

ROUTE_ACTIVATION_PATCH = "plan-route-activation"


async def walk(run: PlanRunState, dispatcher: Dispatcher, plan: Plan) -> None:
    # A run from a checkpoint restores step by step in plan order: it walks one at a time.
    limit = (plan.concurrency or 1) if run.restore_point is None else 1
    # Asked before the walk dispatches anything, and only by plans with routes, conditions or
    # concurrency (the only ones the rules change): a history from before them replays the
    # plan-order walk.
    if has_routes(plan) or has_conditions(plan) or limit > 1:
        run.control.route_activation = workflow.patched(ROUTE_ACTIVATION_PATCH)
    scope, steps = Scope(run, plan), boundaries(plan)
    if limit > 1 and run.control.route_activation and workflow.patched(CONCURRENT_WALK_PATCH):
        await _walk_overlapping(run, dispatcher, scope, steps, limit)
        return
    await walk_scope(run, dispatcher, scope, steps)


async def _walk_overlapping(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, steps: list[Boundary], limit: int
) -> None:
    """The top level with independent steps in flight together (``overlap``)."""
    routers = forward_routers([scope.step(b.step_id) for b in steps])
    stranded: dict[str, str | None] = {}
    assert run.ledger is not None
    pool = Overlap(run.ledger)
    # Asked only by plans that call a sub-flow: their histories from before it walk each
    # ``run`` step alone.
    subflows = any(b.kind == "run" for b in steps) and workflow.patched(CONCURRENT_SUBFLOWS_PATCH)

    async def decided(boundary: Boundary) -> Verdict:
        verdict = decide(run, scope, boundary, routers)
        if verdict.action == "run":
            verdict = await condition(run, dispatcher, scope, boundary)
        return verdict

    async def alone(boundary: Boundary) -> str | None:
        jump = await _top_level(run, dispatcher, scope, boundary)
        arm(run, scope, boundary)
        return jump

    def admit(boundary: Boundary) -> PlanFailure | str | None:
        step = scope.step(boundary.step_id)
        if not isinstance(step, AgentStep):
            return None  # a set step reserves nothing
        sid = scope.sid(step.id)
        checks, _ = dispatcher.ledgers.for_boundary(sid, None, step, boundary.reservation)
        exhausted = dispatcher.ledgers.check(checks)
        if exhausted is None:
            return None
        failure = budget_failure(run.record, exhausted, sid)
        if exhausted.scope == "step" and exhausted.owner == sid:
            try:
                return _failed(run, scope, step, failure)
            except PlanFailure as exc:
                return exc
        run.record.steps[sid] = "failed"
        return failure

    async def reserve(boundary: Boundary) -> None:
        await _reserve(run, scope.sid(boundary.step_id), boundary.reservation)

    async def overlapped(boundary: Boundary, pool: Overlap) -> str | None:
        step = scope.step(boundary.step_id)
        sid = scope.sid(step.id)
        run.current = sid
        jump: str | None = None
        closed = False
        try:
            if isinstance(step, SetStep):
                await set_step(run, dispatcher, scope, step)
            elif isinstance(step, RunStep):
                jump = await run_subflow(run, dispatcher, scope, step, boundary, pooled)
            else:
                assert isinstance(step, AgentStep)
                _, holds = dispatcher.ledgers.for_boundary(sid, None, step, boundary.reservation)
                held = dispatcher.ledgers.hold(holds)
                try:
                    jump = await _agent(run, dispatcher, scope, step)
                finally:
                    dispatcher.ledgers.release(held)
        except GeneratorExit:
            closed = True  # as in _boundary: outside an activation nothing may be recorded
            raise
        finally:
            if not closed and not isinstance(step, RunStep):  # its children left the pool
                pool.leave()
        note_fingerprint(run, dispatcher, scope.plan, step)
        return jump

    async def pooled(
        run: PlanRunState, dispatcher: Dispatcher, body: Scope, children: list[Boundary]
    ) -> None:
        body.pool = pool
        await walk_scope(run, dispatcher, body, children)

    def routed(boundary: Boundary, jump: str) -> None:
        run.record.event("route", frm=scope.sid(boundary.step_id), to=scope.sid(jump))

    hooks = Hooks(
        decide=decided,
        not_run=lambda boundary, verdict: not_run(run, scope, boundary, verdict, stranded),
        alone=alone,
        admit=admit,
        reserve=reserve,
        overlapped=overlapped,
        revert=lambda label: apply_revert(run, steps, label),
        routed=routed,
        subflows=subflows,
    )
    await walk_overlapping(run, scope, steps, limit, hooks, pool)
    if (failure := stranded_failure(run, scope, steps, stranded)) is not None:
        raise failure


async def walk_scope(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, steps: list[Boundary]
) -> None:
    """Walk the boundaries of one scope: the top level, or a sub-flow's body."""
    index = {b.step_id: b.index for b in steps}
    ordered = [scope.step(b.step_id) for b in steps]
    routers = forward_routers(ordered)
    activation = run.control.route_activation
    stranded: dict[str, str | None] = {}
    i = 0
    while i < len(steps):
        boundary = steps[i]
        sid = scope.sid(boundary.step_id)
        if activation:
            decided = decide(run, scope, boundary, routers)
            if decided.action == "run":
                decided = await condition(run, dispatcher, scope, boundary)
            if decided.action != "run":
                not_run(run, scope, boundary, decided, stranded)
                i += 1
                continue
        elif boundary.on_fail_target and sid not in run.on_fail_armed:
            run.record.steps[sid] = "skipped"
            i += 1
            continue
        if scope.prefix is None:  # checkpoints, reverts and --from are the top level's
            try:
                jump = await _top_level(run, dispatcher, scope, boundary)
            except Reverted as exc:  # a wait was abandoned: restore, go on at the first unsettled
                i = apply_revert(run, steps, exc.label)
                continue
        else:
            jump = await _boundary(run, dispatcher, scope, boundary)
        if activation:
            arm(run, scope, boundary)
            if jump is not None and index[jump] > index[boundary.step_id]:
                # A route forward arms its target (done above, or by the failure that took
                # it); what runs on the way there is for activation to say, not the jump.
                run.record.event("route", frm=sid, to=scope.sid(jump))
                i += 1
                continue
        if jump is not None:
            run.record.event("route", frm=sid, to=scope.sid(jump))
        i = index[jump] if jump is not None else i + 1
    if activation and (failure := stranded_failure(run, scope, steps, stranded)) is not None:
        raise failure


async def _top_level(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, boundary: Boundary
) -> str | None:
    """A top-level boundary: restored from ``--from`` when it matches, else run; once settled,
    its fingerprint, and its checkpoint committed."""
    plan = scope.plan
    step = plan.step(boundary.step_id)
    restored, jump = await restore(run, dispatcher, plan, step)
    if not restored:
        jump = await _boundary(run, dispatcher, scope, boundary)
    note_fingerprint(run, dispatcher, plan, step)
    label = getattr(step, "checkpoint", None)
    if label is not None and run.record.steps.get(step.id) == "settled":
        commit(run, label, f"step:{step.id}")
    return jump


async def _boundary(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, boundary: Boundary
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
        return await run_subflow(run, dispatcher, scope, step, boundary, walk_scope)
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
            return _failed(run, scope, step, failure)
        run.record.steps[sid] = "failed"
        raise failure
    ledger, pool = dispatcher.ledger, scope.pool
    if pool is None:
        await _reserve(run, sid, reservation)
        ledger.open(sid, reservation)
    else:  # a body beside other steps: join the reservation they share
        await pool.enter(sid, reservation, lambda: _reserve(run, sid, reservation))
    held = dispatcher.ledgers.hold(holds)
    started = workflow.now()
    closed = False
    try:
        if isinstance(step, AgentStep):
            return await _agent(run, dispatcher, scope, step)
        if isinstance(step, GateStep):
            await model_gate(run, dispatcher, scope, step)
        elif isinstance(step, FanoutStep):
            await region(run, dispatcher, plan, step, items)
        elif isinstance(step, TournamentStep):
            output = await run_tournament(
                dispatcher,
                step,
                max_calls=reservation.invocations,
                inputs=run.args,
                outputs=run.outputs,
            )
            run.settle(step.id, output)
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


async def _agent(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, step: AgentStep
) -> str | None:
    """An agent step; a failure with an ``on_fail`` route arms that step and jumps to it."""
    try:
        output = await dispatcher.invoke(
            step, inputs=scope.inputs, outputs=scope.outputs, scope=scope.prefix
        )
    except PlanFailure as exc:
        return _failed(run, scope, step, exc)
    scope.settle(step.id, output)
    return None


def _failed(run: PlanRunState, scope: Scope, step: AgentStep, exc: PlanFailure) -> str:
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


async def _reserve(run: PlanRunState, step_id: str, res: Reservation) -> None:
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
