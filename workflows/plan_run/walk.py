"""The boundary walk (docs/plans.md): boundaries in plan order, each reserving its worst case
before it runs (``boundary_run``); with the plan's ``concurrency`` above 1, the top level's
independent agent and set steps overlap (``overlap``), and so do its ``run`` steps, whose
bodies' children then join the reservation in flight, (behind ``plan-concurrent-bodies``) a
body's independent children among themselves, and (behind ``plan-concurrent-gates-tournaments``)
model gates and tournament steps; everything else runs as below.

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
        else (``boundary_run``): reserve innermost first -- the step's own ledger, a
        fan-out's, the enclosing sub-flow's (each fails its scope at once when it cannot
        fit), then the run's (wait ``awaiting_budget`` / ``awaiting_wall_clock`` for
        ``extend_budget`` when it does not fit) --, open the reservation, run it -- agent
        step | model gate | region | tournament -- spend its wall time, close it
        a route (``on_fail``, a gate decision) forward arms its target; one back (a
        revise, a gate routing to an earlier step) jumps the walk to that step
        a settled top-level step: its fingerprint; with ``checkpoint: LABEL``, a commit
        ``--from RUN:LABEL``: a step whose fingerprint matches is restored, not run
        a revert (``Reverted`` out of a wait): restore the snapshot, go on at its first
        unsettled step (``checkpoints``)
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activation import Verdict, forward_routers, has_conditions, has_routes
    from workflows.plan.boundaries import Boundary, boundaries
    from workflows.plan.checkpoints import Reverted
    from workflows.plan.model import (
        AgentStep,
        GateStep,
        Plan,
        RunStep,
        SetStep,
        TournamentStep,
    )
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.boundary_run import (
        reserve_worst_case,
        route_failure,
        run_agent,
        run_boundary,
        run_tournament_step,
    )
    from workflows.plan_run.checkpoints import apply_revert, commit, note_fingerprint, restore
    from workflows.plan_run.dispatch import Dispatcher, budget_failure
    from workflows.plan_run.gates import model_gate
    from workflows.plan_run.overlap import (
        CONCURRENT_BODIES_PATCH,
        CONCURRENT_JUDGED_PATCH,
        CONCURRENT_SUBFLOWS_PATCH,
        CONCURRENT_WALK_PATCH,
        Hooks,
        Overlap,
        walk_overlapping,
    )
    from workflows.plan_run.routes import arm, condition, decide, not_run, stranded_failure
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.set_steps import set_step
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.subflows import run_subflow

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
        # Asked only by plans that call a sub-flow: their histories from before it walk each
        # body one boundary at a time.
        if any(b.kind == "run" for b in steps) and workflow.patched(CONCURRENT_BODIES_PATCH):
            run.control.body_limit = limit
        # Likewise plans with a model gate or a tournament step (a body's included).
        if _judged_steps(plan) and workflow.patched(CONCURRENT_JUDGED_PATCH):
            run.control.judged = True
        await _walk_overlapping(run, dispatcher, scope, steps, limit)
        return
    await walk_scope(run, dispatcher, scope, steps)


async def _walk_overlapping(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, steps: list[Boundary], limit: int
) -> None:
    """A scope with independent steps in flight together (``overlap``): the top level, or a
    sub-flow's body, whose children join the reservation its ``run`` step's siblings share."""
    routers = forward_routers([scope.step(b.step_id) for b in steps])
    stranded: dict[str, str | None] = {}
    assert run.ledger is not None
    top = scope.prefix is None
    if top:
        pool = Overlap(run.ledger)
        # Asked only by plans that call a sub-flow: their histories from before it walk each
        # ``run`` step alone.
        subflows = any(b.kind == "run" for b in steps) and workflow.patched(
            CONCURRENT_SUBFLOWS_PATCH
        )
    else:  # a body: beside its run step's siblings, or alone in a pool of its own
        pool = scope.pool or Overlap(run.ledger)
        scope.pool, subflows = pool, False

    async def decided(boundary: Boundary) -> Verdict:
        verdict = decide(run, scope, boundary, routers)
        if verdict.action == "run":
            verdict = await condition(run, dispatcher, scope, boundary)
        return verdict

    async def alone(boundary: Boundary) -> str | None:
        if top:
            jump = await _top_level(run, dispatcher, scope, boundary)
        else:
            jump = await run_boundary(run, dispatcher, scope, boundary, walk_scope)
        arm(run, scope, boundary)
        return jump

    def admit(boundary: Boundary) -> PlanFailure | str | None:
        step = scope.step(boundary.step_id)
        if not isinstance(step, AgentStep | GateStep):
            return None  # a set step reserves nothing; a tournament has no nested ledger
        sid = scope.sid(step.id)
        checks, _ = dispatcher.ledgers.for_boundary(sid, scope.prefix, step, boundary.reservation)
        exhausted = dispatcher.ledgers.check(checks)
        if exhausted is None:
            return None
        failure = budget_failure(run.record, exhausted, sid)
        if isinstance(step, AgentStep) and exhausted.scope == "step" and exhausted.owner == sid:
            try:
                return route_failure(run, scope, step, failure)
            except PlanFailure as exc:
                return exc
        run.record.steps[sid] = "failed"
        return failure

    async def reserve(boundary: Boundary) -> None:
        run.current = scope.sid(boundary.step_id)  # status names the step that waits
        await reserve_worst_case(run, run.current, boundary.reservation)

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
            elif isinstance(step, TournamentStep):
                await run_tournament_step(run, dispatcher, step, boundary.reservation)
            else:
                assert isinstance(step, AgentStep | GateStep)
                _, holds = dispatcher.ledgers.for_boundary(
                    sid, scope.prefix, step, boundary.reservation
                )
                held = dispatcher.ledgers.hold(holds)
                try:
                    if isinstance(step, GateStep):
                        await model_gate(run, dispatcher, scope, step)
                    else:
                        jump = await run_agent(run, dispatcher, scope, step)
                finally:
                    dispatcher.ledgers.release(held)
        except GeneratorExit:
            closed = True  # as in run_boundary: outside an activation nothing may be recorded
            raise
        finally:
            if not closed and not isinstance(step, RunStep):  # its children left the pool
                pool.leave()
        if top:
            note_fingerprint(run, dispatcher, scope.plan, step)
        return jump

    async def pooled(
        run: PlanRunState, dispatcher: Dispatcher, body: Scope, children: list[Boundary]
    ) -> None:
        body.pool = pool
        await walk_scope(run, dispatcher, body, children)

    def room(boundary: Boundary, beside: list[Boundary]) -> bool:
        return dispatcher.ledgers.room_beside(
            scope.prefix, boundary.reservation, [b.reservation for b in beside]
        )

    def routed(boundary: Boundary, jump: str) -> None:
        run.record.event("route", frm=scope.sid(boundary.step_id), to=scope.sid(jump))

    hooks = Hooks(
        decide=decided,
        not_run=lambda boundary, verdict: not_run(run, scope, boundary, verdict, stranded),
        alone=alone,
        admit=admit,
        reserve=reserve,
        overlapped=overlapped,
        revert=(lambda label: apply_revert(run, steps, label)) if top else None,
        routed=routed,
        subflows=subflows,
        room=None if top else room,
        judged=run.control.judged,
        shared=not top,
    )
    await walk_overlapping(run, scope, steps, limit, hooks, pool)
    if (failure := stranded_failure(run, scope, steps, stranded)) is not None:
        raise failure


async def walk_scope(
    run: PlanRunState, dispatcher: Dispatcher, scope: Scope, steps: list[Boundary]
) -> None:
    """Walk the boundaries of one scope: the top level, or a sub-flow's body."""
    if scope.prefix is not None and run.control.body_limit > 1:
        await _walk_overlapping(run, dispatcher, scope, steps, run.control.body_limit)
        return
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
            jump = await run_boundary(run, dispatcher, scope, boundary, walk_scope)
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
        jump = await run_boundary(run, dispatcher, scope, boundary, walk_scope)
    note_fingerprint(run, dispatcher, plan, step)
    label = getattr(step, "checkpoint", None)
    if label is not None and run.record.steps.get(step.id) == "settled":
        commit(run, label, f"step:{step.id}")
    return jump


def _judged_steps(plan: Plan) -> bool:
    """Whether the plan has a model gate or a tournament step anywhere (a body's included)."""
    every = [*plan.steps, *(c for flow in plan.flows.values() for c in flow.steps)]
    return any(
        isinstance(s, TournamentStep) or (isinstance(s, GateStep) and not s.is_human())
        for s in every
    )
