"""Direct tests of what a running campaign knows: reservations, settling, events, progress."""

from __future__ import annotations

from workflows.budget import BudgetLimits, BudgetSpent
from workflows.campaign.cells_budget import CellBudget
from workflows.campaign.matrix import Cell
from workflows.campaign.records import RunRecord
from workflows.campaign.state import EVENTS_PAGE, CampaignState
from workflows.campaign.types import CellOutcome


def state(max_calls: int | None = 10) -> CampaignState:
    ticks = iter(f"t{i}" for i in range(10_000))
    return CampaignState(
        run_id="camp",
        now=lambda: next(ticks),
        budget=CellBudget.of(BudgetLimits(max_calls=max_calls)),
    )


def cell(index: int) -> Cell:
    return Cell(
        index=index, variant="v", scenario="s", seed=0, run_id=f"camp.{index}", child_seed=0
    )


def record(variant: str, score: float | None, failure: str | None = None) -> RunRecord:
    return RunRecord(
        run_id="r",
        campaign="c",
        variant=variant,
        scenario="s",
        seed=0,
        split="holdout",
        model="m",
        prompt_hash="p",
        config_hash="h",
        commit_sha="x",
        wall_ms=0,
        cost_usd=0,
        holdout_score=score,
        failure_class=failure,  # type: ignore[arg-type]
    )


def test_events_are_numbered_from_one_and_stamped_by_the_clock() -> None:
    s = state()
    s.event("a", x=1)
    s.event("b")
    assert [(e.seq, e.ts, e.type, e.data) for e in s.events] == [
        (1, "t0", "a", {"x": 1}),
        (2, "t1", "b", {}),
    ]


def test_a_reservation_that_does_not_fit_an_idle_campaign_awaits_the_budget() -> None:
    s = state(max_calls=5)
    assert s.try_reserve(3) is True
    assert s.status == "running" and s.events == []
    s.running.add(0)
    assert s.try_reserve(3) is False  # a cell runs: it may free the budget, nothing to say yet
    assert (s.status, s.blocking, s.awaiting_cell_calls, s.events) == ("running", None, None, [])
    s.running.clear()
    assert s.try_reserve(3) is False
    assert (s.status, s.blocking, s.awaiting_cell_calls) == ("awaiting_budget", "max_calls", 3)
    assert [(e.type, e.data) for e in s.events] == [
        ("campaign.awaiting_budget", {"limit": "max_calls", "cell_calls": 3})
    ]
    s.extend(BudgetLimits(max_calls=6))
    assert s.version == 1
    assert s.events[-1].type == "budget.extended"
    assert s.events[-1].data["budget"] == BudgetLimits(max_calls=6).model_dump()
    assert s.try_reserve(3) is True
    assert (s.status, s.blocking, s.awaiting_cell_calls) == ("running", None, None)
    assert s.events[-1].type == "campaign.resumed"
    assert s.budget.reserved_calls == 6


def test_settling_replaces_the_reservation_by_the_spend() -> None:
    s = state()
    s.try_reserve(4)
    s.running.add(1)
    outcome = CellOutcome(exists=True, completed=True, input_tokens=5, output_tokens=6, usd=0.5)
    s.settle(cell(1), 4, outcome, calls=2, failed=True)
    assert s.budget.reserved_calls == 0
    assert s.budget.budget.spent == BudgetSpent(
        calls=2, failed_calls=1, input_tokens=5, output_tokens=6, usd=0.5
    )
    assert s.running == set()
    assert s.version == 1
    s.settle(cell(2), 0, outcome, calls=0, failed=False)
    assert s.version == 2
    assert s.budget.budget.spent.failed_calls == 1


def test_an_unsettled_cell_spends_its_worst_case_and_is_kept_apart() -> None:
    s = state()
    s.try_reserve(4)
    s.running.add(3)
    unsettled = record("v", None, "unsettled")
    s.unsettle(cell(3), 4, unsettled)
    assert s.budget.reserved_calls == 0
    assert s.budget.budget.spent == BudgetSpent(calls=4, failed_calls=1)
    assert (s.running, s.unsettled, s.records) == (set(), {3}, {3: unsettled})
    assert (s.events[-1].type, s.events[-1].data) == (
        "cell.unsettled",
        {"cell": 3, "run_id": "camp.3", "calls": 4},
    )


def test_a_recorded_cell_s_event_and_the_failed_count() -> None:
    s = state()
    s.record(cell(1), record("v", 0.5))
    s.record(cell(0), record("v", None, "scorer_failed"))
    s.record(cell(2), record("v", None, "cancelled"))
    assert (s.events[0].type, s.events[0].data) == (
        "cell.finished",
        {"cell": 1, "run_id": "camp.1", "score": 0.5, "failure_class": None},
    )
    assert s.events[1].data["failure_class"] == "scorer_failed"
    assert s.failed_cells() == 1  # a cancelled cell is no failure
    assert [r.failure_class for r in s.ordered_records()] == ["scorer_failed", None, "cancelled"]


def test_a_failure_is_its_code_and_message() -> None:
    s = state()
    s.fail("integrity.failed", "bad")
    assert (s.status, s.error) == ("failed", "integrity.failed: bad")


def test_progress_is_what_the_state_knows() -> None:
    s = state(max_calls=10)
    s.cells = [cell(i) for i in range(4)]
    s.try_reserve(3)
    s.running.add(2)
    s.record(cell(0), record("a", 0.25))
    s.record(cell(1), record("b", None, "runner_threw"))
    s.fingerprint, s.error = "fp", "e"
    s.refused = [f"r{i}" for i in range(7)]
    progress = s.progress()
    assert progress.model_dump() == {
        "run_id": "camp",
        "status": "running",
        "cells_total": 4,
        "cells_done": 2,
        "cells_running": 1,
        "cells_failed": 1,
        "budget": BudgetLimits(max_calls=10).model_dump(),
        "spent": BudgetSpent().model_dump(),
        "reserved_calls": 3,
        "blocking_limit": None,
        "awaiting_cell_calls": None,
        "leader": "a",
        "leader_mean": 0.25,
        "fingerprint": "fp",
        "error": "e",
        "refused": ["r2", "r3", "r4", "r5", "r6"],
    }
    paid = CellOutcome(exists=True, completed=True, usd=0.5)
    s.settle(cell(2), 3, paid, calls=2, failed=False)
    assert s.progress().spent.usd == 0.5


def test_events_after_a_cursor_come_a_page_at_a_time() -> None:
    s = state()
    for i in range(EVENTS_PAGE + 3):
        s.event("e", i=i)
    page = s.events_after(2)
    assert len(page) == EVENTS_PAGE == 500
    assert page[0].seq == 3
    assert [e.seq for e in s.events_after(EVENTS_PAGE)] == [501, 502, 503]
    assert s.events_after(503) == []
