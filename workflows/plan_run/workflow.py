"""``PlanRun``: a plan interpreted as a durable workflow, in the order below.

    decode input -> validate the plan -> ``preflight`` (refusals in a fixed order)
    -> ``walk`` the boundaries with reservations: agent steps and model gates go through
       ``dispatch``; ``gates`` (model and human), ``regions`` (fan-out + join), ``pauses``,
       tournaments as ``child`` workflows
    -> ``finish``: completed (a result), failed (``ApplicationError`` typed with the reason),
       cancelled

Pauses, human gates (with their deadline and escalation timers, ``deadlines``) and budget waits
wait in the same workflow run; ``capture`` writes training pairs for plans that opt in. The
message handlers and the state they guard are in ``state``; the arithmetic, grammar and rules
are the pure modules of ``workflows.plan``.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.completion import complete_despite_cancel
    from workflows.inputs import INPUT_INVALID
    from workflows.names import PLAN_RUN
    from workflows.plan.consumer import consumer_step_ids, plan_digest
    from workflows.plan.flows import step_ids
    from workflows.plan.run_record import PlanFailure, TerminalRoute
    from workflows.plan.run_types import PlanFailureDetail, PlanRunResult, RunState
    from workflows.plan_run.checkpoint_control import CheckpointControl
    from workflows.plan_run.checkpoints import open_restore_point
    from workflows.plan_run.consumer import consumer_hook
    from workflows.plan_run.consumer_control import ConsumerControl
    from workflows.plan_run.finish import end_run, fail_now
    from workflows.plan_run.preflight import preflight
    from workflows.plan_run.walk import walk
    from workflows.raw_input import NO_INPUT, input_failure
    from workflows.run_ids import RUN_ID_INVALID, run_id_problem
    from workflows.run_refusals import run_store_refusal

__all__ = ["PLAN_INVALID", "PlanRunWorkflow"]

PLAN_INVALID = "plan-invalid"


@workflow.defn(name=PLAN_RUN)
class PlanRunWorkflow(ConsumerControl, CheckpointControl):
    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> PlanRunResult:
        if self.input_error is not None:
            fail_now(self, self.input_error.code, self.input_error.message)
            raise input_failure(self.input_error)
        if (problem := run_id_problem(self.run_id)) is not None:
            fail_now(self, RUN_ID_INVALID, problem)
            raise ApplicationError(problem, type=RUN_ID_INVALID, non_retryable=True)
        validation = self.validation  # read in ``__init__``, before any message
        if validation is None or validation.plan is None or validation.errors:
            errors = validation.errors if validation is not None else []
            detail = "; ".join(e.line() for e in errors[:20]) or "invalid plan"
            fail_now(self, PLAN_INVALID, detail)
            raise ApplicationError(detail, type=PLAN_INVALID, non_retryable=True)
        self.plan = plan = validation.plan
        self.wall_started = workflow.now()
        self.record.steps = {sid: "pending" for sid in step_ids(plan)}
        self.consumer_steps = consumer_step_ids(plan)
        self.plan_digest = plan_digest(self.input.plan)
        if (bad_args := self.bad_args) is not None:
            fail_now(self, INPUT_INVALID, bad_args)
            raise ApplicationError(bad_args, type=INPUT_INVALID, non_retryable=True)
        if self.input.from_checkpoint is not None:
            refused = await open_restore_point(self, self.input.from_checkpoint)
            if refused is not None:  # refused before the run opens, like a bad argument
                fail_now(self, *refused)
                raise ApplicationError(refused[1], type=refused[0], non_retryable=True)
        try:
            self.state = "running"
            self.record.event("run.opened", plan=plan.name, steps=len(plan.steps))
            dispatcher = await preflight(self, plan)
            dispatcher.consumer = consumer_hook(self)
            await walk(self, dispatcher, plan)
        except TerminalRoute as exc:
            self.route_label = exc.label
            self.record.event("route.terminal", route=exc.label)
        except PlanFailure as exc:
            await self._end("failed", exc.reason, exc.detail)
            # The cause (a failed call's own error type) as structured detail: the reason is
            # the closed enum, and a campaign cell tells a replay miss by the cause.
            raise ApplicationError(
                exc.detail, PlanFailureDetail(cause=exc.cause), type=exc.reason, non_retryable=True
            ) from None
        except (asyncio.CancelledError, ActivityError) as exc:
            if (store_refused := run_store_refusal(exc)) is not None:
                raise store_refused from None  # coded like Ask's; no summary (it would be refused)
            if not is_cancelled_exception(exc):
                raise
            await self._end("cancelled", None, None)
            raise asyncio.CancelledError() from None
        await complete_despite_cancel(self._end("completed", None, None))
        return PlanRunResult(
            run_id=self.run_id,
            route=self.route_label,
            outputs=self.outputs,
            calls=self.calls_spent(),  # the ledger's count, as status shows it
            invocations=len(self.record.calls),
            usd=round(sum(c.usd for c in self.record.calls), 6),
            simulated=self.simulated(),
            capture_failures=self.capture_failures,
        )

    async def _end(self, state: RunState, reason: str | None, detail: str | None) -> None:
        """``end_run``; a run store that refuses the run's directory (its id was used before)
        fails the run with the store's code, as an Ask or a Tournament does."""
        try:
            await end_run(self, state, reason, detail)
        except ActivityError as exc:
            if (refused := run_store_refusal(exc)) is not None:
                raise refused from None
            raise
