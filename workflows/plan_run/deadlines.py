"""Human-gate deadlines and escalation (docs/plans.md, "Gate deadlines and escalation"), from
workflow code.

A timed gate waits on durable timers (``workflow.wait_condition(..., timeout=...)``), measured
from when its wait opened:

    escalate.after_ms, nobody having decided -> ``gate.escalated``, ``escalated`` in status, and
        with ``notify`` a post by the ``plan_notify_gate`` activity, in the background so a
        slow webhook never holds the gate (a failed post is ``gate.escalation_failed``, never a
        run failure; the run's end waits for it, so the trace tells)
    deadline, nobody having decided -> the default is the decision (``gate.defaulted
        {decided_by: deadline}``); the gate's token is void from then on, so a late decision
        is refused ``stale-gate-token``

A decision before a timer cancels it (the condition wins the wait); a decision in the same
workflow task as the deadline's timer wins too (it is checked before the default applies).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activity_contracts import NOTIFY_GATE, NOTIFY_NOT_RETRYABLE
    from workflows.plan.deadlines import GateSchedule
    from workflows.plan.model import GateStep
    from workflows.plan.run_types import NotifyGateInput, PendingGate
    from workflows.plan_run.state import PlanRunState

__all__ = ["NOTIFY_RETRY", "gate_command", "open_timed_gate", "wait_with_timers"]

NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_attempts=3,
    non_retryable_error_types=NOTIFY_NOT_RETRYABLE,
)
NOTIFY_ATTEMPT = timedelta(seconds=75)
"""One post: the notifier's own timeout (at most 60 s, worker side) plus slack."""
NOTIFY_TOTAL = timedelta(minutes=5)


def gate_command(run_id: str, step_id: str) -> str:
    return f"ponder gate approve|revise|kill {run_id} {step_id}"


def _at(opened: datetime, ms: int | None) -> str | None:
    return None if ms is None else (opened + timedelta(milliseconds=ms)).isoformat()


def open_timed_gate(
    pending: PendingGate, step: GateStep, sched: GateSchedule, opened: datetime
) -> PendingGate:
    """``pending`` with its deadline, default and escalation shown (status, ``gate.opened``)."""
    gate = step.gate
    assert gate is not None
    return pending.model_copy(
        update={
            "deadline_at": _at(opened, sched.deadline_ms),
            "default": sched.default,
            "escalate_at": _at(opened, sched.escalate_ms),
            "notify": gate.escalate.notify if gate.escalate is not None else None,
        }
    )


async def _until(decided: Callable[[], bool], opened: datetime, offset_ms: int) -> bool:
    """Wait until ``decided`` or ``offset_ms`` after ``opened``; True if decided."""
    left = opened + timedelta(milliseconds=offset_ms) - workflow.now()
    try:
        await workflow.wait_condition(decided, timeout=max(left, timedelta(milliseconds=1)))
    except TimeoutError:
        return decided()
    return True


async def wait_with_timers(
    run: PlanRunState, step_id: str, sched: GateSchedule, pending: PendingGate, opened: datetime
) -> None:
    """Wait for the gate's decision, escalating and defaulting on the way (see the module);
    the offsets count from ``opened``, the time ``pending`` shows them from."""

    def decided() -> bool:  # or abandoned: a revert ends every wait (plan_run.checkpoints)
        return step_id in run.decisions or run.control.revert_to is not None

    if sched.escalate_ms is not None and not await _until(decided, opened, sched.escalate_ms):
        _escalate(run, step_id, pending)
    if sched.deadline_ms is None:
        await workflow.wait_condition(decided)
        return
    if await _until(decided, opened, sched.deadline_ms):
        return
    assert sched.default is not None  # the validator requires one with a deadline
    run.decisions[step_id] = sched.default
    run.expired_tokens[step_id] = pending.token
    run.record.event(
        "gate.defaulted",
        step=step_id,
        decision=sched.default,
        decided_by="deadline",
        round=pending.round,
        deadline_at=pending.deadline_at,
    )


def _escalate(run: PlanRunState, step_id: str, pending: PendingGate) -> None:
    pending.escalated = True  # the object status shows (run.gates[step_id])
    run.record.event(
        "gate.escalated",
        step=step_id,
        round=pending.round,
        deadline_at=pending.deadline_at,
        notify=pending.notify,
    )
    if pending.notify is not None:
        post = NotifyGateInput(
            notifier=pending.notify,
            run_id=run.run_id,
            step=step_id,
            deadline_at=pending.deadline_at,
            command=gate_command(run.run_id, step_id),
        )
        run.side_tasks.append(asyncio.create_task(_post(run, post, pending.round)))


async def _post(run: PlanRunState, post: NotifyGateInput, round: int) -> None:
    try:
        await workflow.execute_activity(
            NOTIFY_GATE,
            post,
            result_type=int,
            start_to_close_timeout=NOTIFY_ATTEMPT,
            schedule_to_close_timeout=NOTIFY_TOTAL,
            retry_policy=NOTIFY_RETRY,
        )
    except ActivityError as exc:
        if is_cancelled_exception(exc):
            return
        cause = exc.cause
        run.record.event(
            "gate.escalation_failed",
            step=post.step,
            round=round,
            notify=post.notifier,
            error=str(getattr(cause, "message", None) or cause or exc),
        )
