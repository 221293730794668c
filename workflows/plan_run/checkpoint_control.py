"""The checkpoint messages of a ``PlanRun``: ``checkpoint(label)`` and ``revert(label)``, each an
update with a validator and a signal form (refusals recorded as ``control.refused``).

A commit is always accepted (a step in flight counts as unsettled); a label must match the
pattern, and past 50 labels only a label already kept may be committed again (``invalid-label``).
A revert is refused for an unknown label (``checkpoint-not-found``, listing the labels in commit
order) and while anything is in flight (``checkpoint-busy``): it is accepted only while the run
waits (a gate, a pause, a budget or a consumer) with no engine invocation running. The walk then
applies it (``plan_run.checkpoints.apply_revert``); the update answers once it has.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import InputInvalid
    from workflows.names import (
        SIGNAL_CHECKPOINT,
        SIGNAL_REVERT,
        UPDATE_CHECKPOINT,
        UPDATE_REVERT,
    )
    from workflows.plan.checkpoints import (
        MAX_CHECKPOINTS,
        CheckpointInput,
        CheckpointResult,
        RevertInput,
        RevertResult,
        check_label,
        revert_refusal,
    )
    from workflows.plan.control import Refusal
    from workflows.plan.reasons import Reason
    from workflows.plan_run.checkpoints import commit
    from workflows.plan_run.state import PlanRunState, Refused, rejected
    from workflows.raw_input import NO_INPUT, decode_raw

__all__ = ["CheckpointControl"]

WAITING = ("awaiting_budget", "awaiting_wall_clock", "awaiting_input", "awaiting_gate")
REVERTIBLE = (*WAITING, "awaiting_consumer")
ENDED = ("completed", "failed", "cancelled")


class CheckpointControl(PlanRunState):
    def _commit_check(self, raw: RawValue) -> tuple[CheckpointInput | None, Refused | None]:
        input = decode_raw(CheckpointInput, raw)
        if isinstance(input, InputInvalid):
            return None, input
        if self.state in ENDED or self.plan is None:
            return None, f"the run is {self.state}"
        bad = check_label(input.label)
        if bad is not None:
            return None, bad
        reserved = [s.checkpoint for s in self.plan.steps if getattr(s, "checkpoint", None)]
        if not self.book.room_for(input.label, reserved):  # type: ignore[arg-type]
            return None, Refusal(
                Reason.INVALID_LABEL,
                f"a run keeps at most {MAX_CHECKPOINTS} checkpoint labels, the plan's own "
                f"included (kept: {', '.join(self.book.labels())}); fix: re-commit one of them",
            )
        return input, None

    def _commit(self, label: str) -> CheckpointResult:
        snap = commit(self, label, "operator")
        settled = sorted(s for s, state in snap.states.items() if state == "settled")
        return CheckpointResult(label=label, settled=settled, labels=self.book.labels())

    @workflow.update(name=UPDATE_CHECKPOINT)
    def checkpoint(self, raw: RawValue = NO_INPUT) -> CheckpointResult:
        input, refusal = self._commit_check(raw)
        if input is None:
            raise rejected(refusal or "refused")
        return self._commit(input.label)

    @checkpoint.validator
    def _check_checkpoint(self, raw: RawValue = NO_INPUT) -> None:
        _, refusal = self._commit_check(raw)
        if refusal is not None:
            raise rejected(refusal)

    @workflow.signal(name=SIGNAL_CHECKPOINT)
    def checkpoint_signal(self, raw: RawValue = NO_INPUT) -> None:
        input, refusal = self._commit_check(raw)
        if input is None:
            self._refuse("checkpoint", refusal or "refused")
            return
        self._commit(input.label)

    def busy(self) -> str | None:
        """Why a revert cannot be applied now, or None."""
        if self.control.revert_to is not None:
            return f"a revert to {self.control.revert_to!r} is being applied"
        if self.state not in REVERTIBLE:
            step = f" (step {self.current})" if self.current else ""
            return f"the run is {self.state}{step}"
        if self.control.engine_calls:
            return f"{self.control.engine_calls} engine invocation(s) are in flight"
        return None

    def _revert_check(self, raw: RawValue) -> tuple[RevertInput | None, Refused | None]:
        input = decode_raw(RevertInput, raw)
        if isinstance(input, InputInvalid):
            return None, input
        if self.state in ENDED:
            return None, (
                f"the run is {self.state}; a new run can start from it with --from RUN:LABEL"
            )
        refusal = revert_refusal(self.book, input.label, busy=self.busy())
        return (None, refusal) if refusal is not None else (input, None)

    @workflow.update(name=UPDATE_REVERT)
    async def revert(self, raw: RawValue = NO_INPUT) -> RevertResult:
        input, refusal = self._revert_check(raw)
        if input is None:
            raise rejected(refusal or "refused")
        target = self.control.reverts + 1
        self.control.revert_to = input.label
        await workflow.wait_condition(lambda: self.control.reverts >= target or self.state in ENDED)
        if self.last_revert is None or self.control.reverts < target:
            raise ApplicationError(f"the run {self.state} before the revert applied")
        return self.last_revert

    @revert.validator
    def _check_revert(self, raw: RawValue = NO_INPUT) -> None:
        _, refusal = self._revert_check(raw)
        if refusal is not None:
            raise rejected(refusal)

    @workflow.signal(name=SIGNAL_REVERT)
    def revert_signal(self, raw: RawValue = NO_INPUT) -> None:
        input, refusal = self._revert_check(raw)
        if input is None:
            self._refuse("revert", refusal or "refused")
            return
        self.control.revert_to = input.label
