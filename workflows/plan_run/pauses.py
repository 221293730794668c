"""Pause steps (docs/plans.md): the run waits ``awaiting_input`` until the step's
``resume_arg`` has a value (the ``resume`` update or signal, checked in ``state``); the step's
output is that value. A value given at start satisfies the pause without waiting.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.model import PauseStep
    from workflows.plan.reasons import Reason
    from workflows.plan.run_types import PendingPause
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.waits import wait_for_person

__all__ = ["pause"]


async def pause(run: PlanRunState, step: PauseStep) -> None:
    key = step.pause.resume_arg
    if key not in run.args:
        run.pending_pause = PendingPause(
            step=step.id,
            state=step.pause.state,
            resume_arg=key,
            json_schema=step.pause.json_schema,
        )
        run.record.steps[step.id] = "waiting"
        run.record.event("paused", step=step.id, state=step.pause.state, resume_arg=key)
        waited_ms = await wait_for_person(
            run, "awaiting_input", Reason.PLAN_PAUSE, lambda: key in run.args
        )
        run.pending_pause = None
        run.record.event("resumed", step=step.id, resume_arg=key, waited_ms=waited_ms)
    run.settle(step.id, run.args[key])
    run.settle_by_message(step.id, step.deps, resume_arg=key)
