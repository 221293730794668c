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
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import InputInvalid
    from workflows.names import QUERY_ISSUANCE, SIGNAL_STEP_DONE, UPDATE_STEP_DONE
    from workflows.plan.consumer import (
        ConsumerAnswer,
        IssuanceView,
        StepDoneInput,
        StepDoneResult,
        check_step_done,
        consumer_step,
    )
    from workflows.plan_run.state import PlanRunState, Refused, rejected
    from workflows.raw_input import NO_INPUT, decode_raw

__all__ = ["ConsumerControl"]


class ConsumerControl(PlanRunState):
    def _step_done(
        self, raw: RawValue
    ) -> tuple[StepDoneInput | None, ConsumerAnswer | None, Refused | None]:
        input = decode_raw(StepDoneInput, raw)
        if isinstance(input, InputInvalid):
            return None, None, input
        if self.state in ("completed", "failed", "cancelled"):
            return None, None, f"the run is {self.state}"
        answer, refusal = check_step_done(self.desk, self.consumer_steps, input)
        if answer is None:
            return None, None, refusal or "refused"
        return input, answer, None

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
    def step_done(self, raw: RawValue = NO_INPUT) -> StepDoneResult:
        input, answer, refusal = self._step_done(raw)
        if input is None or answer is None:  # the validator refused it: only a changed state
            raise rejected(refusal or "refused")
        return self._accept(input, answer, "update")

    @step_done.validator
    def _check_step_done(self, raw: RawValue = NO_INPUT) -> None:
        _, _, refusal = self._step_done(raw)
        if refusal is not None:
            raise rejected(refusal)

    @workflow.signal(name=SIGNAL_STEP_DONE)
    def step_done_signal(self, raw: RawValue = NO_INPUT) -> None:
        input, answer, refusal = self._step_done(raw)
        if input is None or answer is None:
            self._refuse("step_done", refusal or "refused")
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
