"""The shared budget's reservation arithmetic."""

from __future__ import annotations

from workflows.budget import BudgetLimits
from workflows.campaign.cells_budget import CellBudget


def test_reservations_never_overshoot_max_calls() -> None:
    budget = CellBudget.of(BudgetLimits(max_calls=10))
    assert budget.reserve(4) and budget.reserve(4)
    assert budget.blocking_limit(4) == "max_calls" and not budget.reserve(4)
    budget.settle(4, calls=1, input_tokens=10, output_tokens=5, usd=0.5)
    assert budget.reserve(4)  # 1 spent + 4 + 4 reserved = 9
    assert budget.budget.spent.calls == 1 and budget.reserved_calls == 8
    assert budget.never_fits(11) and not budget.never_fits(10)


def test_usd_stops_new_cells_and_extend_resumes() -> None:
    budget = CellBudget.of(BudgetLimits(max_usd=1.0))
    assert budget.reserve(1)
    budget.settle(1, calls=1, input_tokens=0, output_tokens=0, usd=1.2)
    assert budget.blocking_limit(1) == "max_usd"
    budget.extend(BudgetLimits(max_usd=2.0))
    assert budget.blocking_limit(1) is None
    assert budget.budget.limits.max_usd == 2.0
