"""The consumer-step messages of a ``PlanRun``: the ``step_done`` update (with its validator and
signal form) and the ``issuance(step)`` query.

The validator and the signal apply one rule (``workflows.plan.consumer.check_step_done``): an
unknown or non-consumer step (``unknown-step``), a missing or superseded token or no live
issuance (``stale-dispatch-token``) and a malformed result (``invalid-result``) are refused
before anything enters history (update) or recorded as ``control.refused`` (signal). An accepted
answer is handed to the dispatch waiting for it (``plan_run.consumer``).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.names import QUERY_ISSUANCE, SIGNAL_STEP_DONE, UPDATE_STEP_DONE
    from workflows.plan.consumer import (
        ConsumerAnswer,
        IssuanceView,
        StepDoneInput,
        StepDoneResult,
        check_step_done,
        consumer_step,
    )
    from workflows.plan.control import Refusal
    from workflows.plan_run.state import PlanRunState

__all__ = ["ConsumerControl"]


class ConsumerControl(PlanRunState):
    def _step_done_check(self, input: StepDoneInput) -> tuple[ConsumerAnswer | None, Refusal | str]:
        if self.state in ("completed", "failed", "cancelled"):
            return None, f"the run is {self.state}"
        answer, refusal = check_step_done(self.desk, self.consumer_steps, input)
        if refusal is not None:
            return None, refusal
        return answer, ""

    def _accept(self, input: StepDoneInput, answer: ConsumerAnswer, via: str) -> StepDoneResult:
        issuance = self.desk.accept(input.token, answer)
        accepted = "failure" if answer.failure is not None else "output"
        self.record.event(
            "step_done.accepted",
            step=input.step,
            item=issuance.item,
            attempt=issuance.attempt,
            result=accepted,
            bytes=answer.bytes,
            via=via,
        )
        return StepDoneResult(
            step=input.step, item=issuance.item, attempt=issuance.attempt, accepted=accepted
        )

    @workflow.update(name=UPDATE_STEP_DONE)
    def step_done(self, input: StepDoneInput) -> StepDoneResult:
        answer, refusal = self._step_done_check(input)
        if answer is None:  # the validator refused it: only a changed state gets here
            text = refusal if isinstance(refusal, str) else f"{refusal.reason}: {refusal.message}"
            raise ApplicationError(text, type="control.refused")
        return self._accept(input, answer, "update")

    @step_done.validator
    def _check_step_done(self, input: StepDoneInput) -> None:
        _, refusal = self._step_done_check(input)
        if isinstance(refusal, Refusal):
            raise ValueError(f"{refusal.reason}: {refusal.message}")
        if refusal:
            raise ValueError(refusal)

    @workflow.signal(name=SIGNAL_STEP_DONE)
    def step_done_signal(self, input: StepDoneInput) -> None:
        answer, refusal = self._step_done_check(input)
        if answer is None:
            self._refuse("step_done", refusal)
            return
        self._accept(input, answer, "signal")

    @workflow.query(name=QUERY_ISSUANCE)
    def issuance(self, step: str) -> IssuanceView:
        if step not in self.consumer_steps:
            known = ", ".join(sorted(self.consumer_steps)) or "none"
            raise ValueError(f"unknown-step: {step!r} is not a consumer step (consumer: {known})")
        live = self.desk.of_step(step)
        target = consumer_step(self.plan, step) if self.plan is not None else None
        contract = None
        if self.plan is not None and target is not None and target.out is not None:
            contract = dict(self.plan.contracts.get(target.out, {}))
        return IssuanceView(
            step=step,
            issuances=live,
            prompts={i.token: self.desk.prompts.get(i.token, "") for i in live},
            contract=contract,
            plan_digest=self.plan_digest,
        )
