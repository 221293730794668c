"""Waiting for a person: a pause (``awaiting_input``), a human gate (``awaiting_gate``) or a
budget extension (``awaiting_budget`` / ``awaiting_wall_clock``).

The rule (README, "Plans: wall clock and human waits"): the wall budget is agent time, the
elapsed time of the boundaries that dispatch. A person's wait is never charged to it, however
long it lasts: a plan that waited a weekend for an approval must not then pause again for wall
clock. The waits are counted apart (``status.budget.waited_ms``, ``waiting_since`` while one
is open, ``waited_ms`` on the event that ends it, and ``cost.json``), so "how long did this run
take" and "how long did its agents take" are both answered.

A revert accepted while the run waits ends the wait with ``Reverted`` (the walk restores).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows import metrics
    from workflows.plan.checkpoints import Reverted
    from workflows.plan.reasons import Reason
    from workflows.plan.run_types import RunState
    from workflows.plan_run.finish import write_trace
    from workflows.plan_run.state import PlanRunState

__all__ = ["wait_for_person"]


async def wait_for_person(
    run: PlanRunState,
    state: RunState,
    reason: Reason,
    until: Callable[[], bool],
    *,
    wait: Callable[[], Awaitable[None]] | None = None,
) -> int:
    """Show the wait (state, trace on disk), wait for ``until`` (or run ``wait``, which
    returns once it holds: a gate's timers); returns the ms waited."""
    run.wait_state(state, reason)
    since = workflow.now()
    if not run.open_waits:
        run.waiting_since = since
    entry = (state, reason)
    run.open_waits.append(entry)
    control = run.control
    metrics.pause_started(state)
    try:
        await write_trace(run)
        if wait is not None:
            await wait()  # its condition ends on a revert too (deadlines.wait_with_timers)
        else:
            await workflow.wait_condition(lambda: until() or control.revert_to is not None)
    finally:  # answered, reverted or cancelled: nobody is waited for any more
        metrics.pause_ended(state)
        run.open_waits.remove(entry)
    now = workflow.now()
    waited_ms = max(0, int((now - since).total_seconds() * 1000))
    if run.open_waits:  # another wait is still open (concurrent sub-flows): it is shown
        run.wait_state(*run.open_waits[-1])
    else:  # the time anyone was waited for, counted once however many waits overlapped
        if run.waiting_since is not None:
            run.waited_ms += max(0, int((now - run.waiting_since).total_seconds() * 1000))
        run.waiting_since = None
        run.running()
    if control.revert_to is not None:  # a revert abandons the wait (plan_run.checkpoints)
        raise Reverted(control.revert_to)
    return waited_ms
