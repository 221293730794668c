"""The campaign's shared budget: a cell reserves its worst case before it starts.

Pure (pydantic only), on the one budget model (``workflows/budget.py``). A cell reserves the
calls it may make at most (a single shot 1, a tournament its planned calls, a judge scorer one
more); when it ends its reservation is replaced by what it spent. So ``max_calls`` is never
overshot, however many cells run at once; USD and tokens are known only after a cell and stop
new reservations once reached (overshoot bounded by the cells in flight).
"""

from __future__ import annotations

from pydantic import BaseModel

from workflows.budget import Budget, BudgetLimits

__all__ = ["CellBudget"]


class CellBudget(BaseModel):
    budget: Budget = Budget()
    reserved_calls: int = 0
    """Worst-case calls of the cells in flight, not yet settled."""

    @classmethod
    def of(cls, limits: BudgetLimits) -> CellBudget:
        return cls(budget=Budget(limits=limits))

    def blocking_limit(self, calls: int) -> str | None:
        """The limit that stops a cell needing ``calls`` from starting now, or None."""
        limits, spent = self.budget.limits, self.budget.spent
        if limits.max_calls is not None and spent.calls + self.reserved_calls + calls > (
            limits.max_calls
        ):
            return "max_calls"
        return self.budget.blocking_limit()

    def never_fits(self, calls: int) -> bool:
        """True when even an idle campaign could not start this cell under the limits."""
        limits = self.budget.limits
        return limits.max_calls is not None and calls > limits.max_calls

    def reserve(self, calls: int) -> bool:
        if self.blocking_limit(calls) is not None:
            return False
        self.reserved_calls += calls
        return True

    def settle(
        self,
        reserved: int,
        *,
        calls: int,
        input_tokens: int,
        output_tokens: int,
        usd: float,
        failed: bool = False,
    ) -> None:
        """Replace a cell's reservation with what it spent (a failed cell's calls count)."""
        self.reserved_calls -= reserved
        spent = self.budget.spent
        spent.calls += calls
        spent.input_tokens += input_tokens
        spent.output_tokens += output_tokens
        spent.usd += usd
        spent.failed_calls += int(failed)

    def extend(self, limits: BudgetLimits) -> None:
        current = self.budget.limits.model_dump()
        new = {k: v for k, v in limits.model_dump().items() if v is not None}
        self.budget.limits = BudgetLimits.model_validate(current | new)
