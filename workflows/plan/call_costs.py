"""What one model call of a plan costs, in every ledger that covers its step.

A call (a dispatch, or a judged ensure's judge call) spends one invocation before it starts,
out of the run's ledger and each nested one (a step's, a fan-out's, a sub-flow's); once it
ends, what it used is settled into them all and it gets its row in ``calls``. A call that got
no answer costs its wall clock; a consumer that reports a failure still reports what it spent.
``Books`` is that bookkeeping over the run's ledgers and record, with no clock of its own: the
workflow measures ``wall_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from workflows.model_types import ModelResponse
from workflows.plan.ledger import BudgetInvariantViolated, PlanLedger
from workflows.plan.ledgers import Exhausted, Ledgers
from workflows.plan.reasons import Reason
from workflows.plan.run_record import CallRow, PlanFailure, PlanRecord

__all__ = ["Books", "budget_failure"]


def budget_failure(record: PlanRecord, exhausted: Exhausted, sid: str) -> PlanFailure:
    """A nested ledger refused before ``sid`` could dispatch: traced, and the failure to raise."""
    record.event(
        "budget.exhausted",
        ledger=exhausted.scope,
        owner=exhausted.owner,
        step=sid,
        reason=str(exhausted.reason),
        detail=exhausted.detail,
    )
    return PlanFailure(exhausted.reason, exhausted.message(sid), step=sid)


@dataclass(frozen=True)
class Books:
    """The run's ledger, the nested ledgers and the record a call is booked in."""

    ledger: PlanLedger
    ledgers: Ledgers
    record: PlanRecord

    def spend(self, sid: str) -> None:
        """Before a call: one invocation out of every ledger that covers ``sid``. A nested
        ledger a settled call took over its tokens or usd refuses any next call in its scope."""
        exhausted = self.ledgers.before_call(sid)
        if exhausted is not None:
            raise budget_failure(self.record, exhausted, sid)
        try:
            self.ledger.spend(sid)
            self.ledgers.spend(sid)
        except BudgetInvariantViolated as exc:
            raise PlanFailure(Reason.BUDGET_INVARIANT_VIOLATED, str(exc), step=sid) from None

    def answered(
        self, invocation: str, sid: str, model: str, response: ModelResponse, *, wall_ms: int
    ) -> None:
        """A call that answered: its tokens and usd everywhere, and its row in ``calls``."""
        usage = response.usage
        usd = response.usd or 0.0
        self.ledger.budget.settle(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            usd=usd,
            transport_retries=response.transport_retries,
            failed=False,
        )
        self.record.calls.append(
            CallRow(
                invocation,
                sid,
                model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                usd=usd,
                latency_ms=response.latency_ms,
                simulated=response.simulated,
                priced=response.usd is not None,
            )
        )
        self.ledgers.settle(
            sid, tokens=usage.input_tokens + usage.output_tokens, usd=usd, wall_ms=wall_ms
        )

    def unanswered(
        self, invocation: str, sid: str, model: str, *, outcome: str, wall_ms: int
    ) -> None:
        """A call that got no answer: its wall clock in the nested ledgers, its row marked
        with how it ended."""
        self.ledgers.settle(sid, tokens=0, usd=0.0, wall_ms=wall_ms)
        self.record.calls.append(CallRow(invocation, sid, model, outcome=outcome))

    def reported(self, sid: str, *, tokens: int, usd: float) -> None:
        """What a failing consumer reports it spent: into the run's ledger and every nested one
        (the work happened, as a failed engine call's wall clock did)."""
        self.ledger.budget.settle(
            input_tokens=0, output_tokens=tokens, usd=usd, transport_retries=0
        )
        self.ledgers.settle(sid, tokens=tokens, usd=usd, wall_ms=0)
