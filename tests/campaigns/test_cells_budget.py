"""The shared budget's reservation arithmetic."""

from __future__ import annotations

from workflows.budget import BudgetLimits, BudgetSpent
from workflows.campaign.cells_budget import CellBudget
from workflows.campaign.state import CampaignState


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


def test_an_idle_campaign_awaits_its_budget_and_an_extension_resumes_it() -> None:
    state = CampaignState(
        run_id="c", now=lambda: "t", budget=CellBudget.of(BudgetLimits(max_calls=2))
    )
    assert state.try_reserve(2)
    state.running.add(0)
    assert not state.try_reserve(2)
    assert state.status == "running"  # a cell in flight may free the budget: not paused yet
    state.running.clear()
    state.budget.settle(2, calls=2, input_tokens=0, output_tokens=0, usd=0.0)
    assert not state.try_reserve(2)
    assert (state.status, state.blocking) == ("awaiting_budget", "max_calls")
    version = state.version
    state.extend(BudgetLimits(max_calls=4))
    assert state.version > version  # wakes the waiting lanes
    assert state.try_reserve(2) and state.status == "running" and state.blocking is None
    assert [e.type for e in state.events] == [
        "campaign.awaiting_budget",
        "budget.extended",
        "campaign.resumed",
    ]


def test_an_unsettled_cell_counts_its_worst_case_and_says_why() -> None:
    """A cell still draining at the drain bound: its reserved calls are spent (they may be
    paid), its record is ``unsettled`` and names the bound, and it no longer runs."""
    from tests.campaigns.helpers import document
    from workflows.campaign.cell_records import unsettled_record
    from workflows.campaign.document import validate_value
    from workflows.campaign.matrix import cells

    doc = validate_value(document(drain_timeout_s=2)).document
    assert doc is not None
    cell = cells(doc, "c")[0]
    state = CampaignState(run_id="c", now=lambda: "t")
    assert state.try_reserve(7)
    state.running.add(cell.index)
    record = unsettled_record(doc, cell, calls=7, wall_ms=1500.0, prompt_hash="p")
    state.unsettle(cell, 7, record)
    assert record.failure_class == "unsettled" and record.score is None and record.calls == 7
    assert record.error is not None and "drain bound (2 s, drain_timeout_s)" in record.error
    assert record.integrity_issues == ["unsettled"]
    assert state.budget.reserved_calls == 0 and state.budget.budget.spent.calls == 7
    assert state.budget.budget.spent.failed_calls == 1
    assert state.running == set() and state.unsettled == {cell.index}
    assert state.records[cell.index] is record and state.failed_cells() == 1
    assert state.events[-1].type == "cell.unsettled"


def test_the_reservation_arithmetic_by_hand() -> None:
    budget = CellBudget.of(BudgetLimits(max_calls=10, max_input_tokens=11))
    assert budget.blocking_limit(10) is None and budget.blocking_limit(11) == "max_calls"
    assert budget.reserve(4) and budget.reserve(6)  # exactly max_calls fits
    assert not budget.reserve(1) and budget.reserved_calls == 10
    budget.settle(4, calls=3, input_tokens=10, output_tokens=5, usd=0.25, failed=True)
    budget.settle(6, calls=6, input_tokens=0, output_tokens=2, usd=0.5)
    assert budget.reserved_calls == 0
    assert budget.budget.spent == BudgetSpent(
        calls=9, failed_calls=1, input_tokens=10, output_tokens=7, usd=0.75
    )
    assert budget.blocking_limit(1) is None  # 9 spent + 1 = 10 calls; 10 of 11 input tokens
    budget.settle(0, calls=0, input_tokens=1, output_tokens=0, usd=0.0)
    assert budget.blocking_limit(1) == "max_input_tokens"  # the one budget model's own limits
    assert not budget.reserve(1) and budget.reserved_calls == 0


def test_never_fits_only_past_max_calls_and_extend_keeps_unnamed_limits() -> None:
    unlimited = CellBudget.of(BudgetLimits())
    assert not unlimited.never_fits(10**6) and unlimited.reserve(10**6)
    budget = CellBudget.of(BudgetLimits(max_calls=10, max_usd=1.0))
    assert not budget.never_fits(10) and budget.never_fits(11)
    budget.extend(BudgetLimits(max_usd=2.0))
    assert budget.budget.limits == BudgetLimits(max_calls=10, max_usd=2.0)
    budget.extend(BudgetLimits(max_calls=12))
    assert budget.budget.limits == BudgetLimits(max_calls=12, max_usd=2.0)
