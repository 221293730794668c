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
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
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
    from workflows.plan_run.state import PlanRunState

__all__ = ["CheckpointControl"]

WAITING = ("awaiting_budget", "awaiting_wall_clock", "awaiting_input", "awaiting_gate")
REVERTIBLE = (*WAITING, "awaiting_consumer")
ENDED = ("completed", "failed", "cancelled")


class CheckpointControl(PlanRunState):
    def _commit_refusal(self, label: str) -> Refusal | str | None:
        if self.state in ENDED or self.plan is None:
            return f"the run is {self.state}"
        bad = check_label(label)
        if bad is not None:
            return bad
        reserved = [s.checkpoint for s in self.plan.steps if getattr(s, "checkpoint", None)]
        if not self.book.room_for(label, reserved):  # type: ignore[arg-type]
            return Refusal(
                Reason.INVALID_LABEL,
                f"a run keeps at most {MAX_CHECKPOINTS} checkpoint labels, the plan's own "
                f"included (kept: {', '.join(self.book.labels())}); fix: re-commit one of them",
            )
        return None

    def _commit(self, label: str) -> CheckpointResult:
        snap = commit(self, label, "operator")
        settled = sorted(s for s, state in snap.states.items() if state == "settled")
        return CheckpointResult(label=label, settled=settled, labels=self.book.labels())

    @workflow.update(name=UPDATE_CHECKPOINT)
    def checkpoint(self, input: CheckpointInput) -> CheckpointResult:
        refusal = self._commit_refusal(input.label)
        if refusal is not None:
            raise ApplicationError(_text(refusal), type="control.refused")
        return self._commit(input.label)

    @checkpoint.validator
    def _check_checkpoint(self, input: CheckpointInput) -> None:
        refusal = self._commit_refusal(input.label)
        if refusal is not None:
            raise ValueError(_text(refusal))

    @workflow.signal(name=SIGNAL_CHECKPOINT)
    def checkpoint_signal(self, input: CheckpointInput) -> None:
        refusal = self._commit_refusal(input.label)
        if refusal is not None:
            self._refuse("checkpoint", refusal)
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

    def _revert_refusal(self, label: str) -> Refusal | str | None:
        if self.state in ENDED:
            return f"the run is {self.state}; a new run can start from it with --from RUN:LABEL"
        return revert_refusal(self.book, label, busy=self.busy())

    @workflow.update(name=UPDATE_REVERT)
    async def revert(self, input: RevertInput) -> RevertResult:
        refusal = self._revert_refusal(input.label)
        if refusal is not None:
            raise ApplicationError(_text(refusal), type="control.refused")
        target = self.control.reverts + 1
        self.control.revert_to = input.label
        await workflow.wait_condition(lambda: self.control.reverts >= target or self.state in ENDED)
        if self.last_revert is None or self.control.reverts < target:
            raise ApplicationError(f"the run {self.state} before the revert applied")
        return self.last_revert

    @revert.validator
    def _check_revert(self, input: RevertInput) -> None:
        refusal = self._revert_refusal(input.label)
        if refusal is not None:
            raise ValueError(_text(refusal))

    @workflow.signal(name=SIGNAL_REVERT)
    def revert_signal(self, input: RevertInput) -> None:
        refusal = self._revert_refusal(input.label)
        if refusal is not None:
            self._refuse("revert", refusal)
            return
        self.control.revert_to = input.label


def _text(refusal: Refusal | str) -> str:
    return refusal if isinstance(refusal, str) else f"{refusal.reason}: {refusal.message}"
