"""Boundaries, worst-case reservations, plan totals, the extension cap and the ledger."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.plans.helpers import LOOP_EXAMPLE_PATH, base
from workflows.budget import Budget, BudgetLimits
from workflows.plan.boundaries import (
    DEFAULT_STAGE_TIMEOUT_MS,
    Reservation,
    activated_items,
    boundaries,
    plan_totals,
    tournament_calls,
    unsatisfiable,
)
from workflows.plan.ledger import BudgetInvariantViolated, Extension, PauseNeed, PlanLedger
from workflows.plan.model import Plan, TournamentStep
from workflows.plan.reasons import Reason
from workflows.plan.validate import load_plan
from workflows.tournament.profiles import get_profile
from workflows.tournament.profiles import plan as tournament_plan

T = DEFAULT_STAGE_TIMEOUT_MS
LOOP_EXAMPLE = LOOP_EXAMPLE_PATH


def _loop_plan() -> Plan:
    return load_plan(json.loads(LOOP_EXAMPLE.read_text()))


def test_the_loop_example_walk_and_reservations() -> None:
    walk = boundaries(_loop_plan())
    assert [(b.step_id, b.kind, b.reservation.invocations) for b in walk] == [
        ("plan", "agent", 1),
        ("code", "agent", 2),  # w = max(1, min(max_agents=2, max_attempts=2))
        ("review", "gate", 1 + 2 * (2 + 1)),  # w(gate) + max_redos * (w(route) + w(gate))
        ("approval", "pause", 0),
        ("notes", "region", 3),  # 3 activated items x chain w 1
    ]
    assert walk[-1].members == ("notes.write",)
    assert walk[1].reservation.wall_ms == 2 * T
    assert walk[2].reservation.wall_ms == T + 2 * (2 * T + T)
    assert walk[4].reservation.wall_ms == T  # 3 items x T over 3 lanes


def test_plan_totals_and_the_extension_cap() -> None:
    totals = plan_totals(_loop_plan())
    # default budget: the boundaries' reservations (the region's 3 items each, the gate's redos)
    assert totals.default_calls == totals.reserved_calls == 1 + 2 + (1 + 2 * (2 + 1)) + 3
    assert totals.calls_cap == 2 * 13
    # The reference's rule (kept for histories recorded before): the chain member once.
    reference = plan_totals(_loop_plan(), per_item=False)
    assert reference.default_calls == (1 + 2 + 1 + 1) + 2 * (2 + 1)
    assert reference.calls_cap == max(2 * 11, 13)
    assert totals.default_wall_ms == int(1.5 * totals.reserved_wall_ms)
    assert totals.wall_cap_ms == max(2 * totals.default_wall_ms, totals.reserved_wall_ms)


def test_a_region_can_reserve_more_than_twice_the_plan_total() -> None:
    doc = {
        "schema": "ponder-plan/1",
        "name": "wide",
        "steps": [
            {
                "id": "fan",
                "kind": "fanout",
                "fanout": {"over": list(range(30)), "chain": ["fan.a", "fan.b"], "concurrency": 4},
            },
            {"id": "fan.a", "kind": "agent", "prompt": "a"},
            {"id": "fan.b", "kind": "agent", "prompt": "b", "timeout_ms": 1000},
        ],
    }
    plan = load_plan(doc)
    (region,) = boundaries(plan)
    assert region.reservation == Reservation(60, -(-30 * (T + 1000) // 4))
    totals = plan_totals(plan)
    assert (totals.calls, totals.reserved_calls) == (60, 60)  # no budget: the whole region
    reference = plan_totals(plan, per_item=False)
    assert (reference.calls, reference.calls_cap) == (2, 60)  # max(2 x 2, 60): can finish


def test_activation_caps_items_after_dedup() -> None:
    items = ["a", "b", "a", {"k": 1}, {"k": 1}, "c"]
    assert activated_items(items, dedup=True, max_fanout=3) == ["a", "b", {"k": 1}]
    assert activated_items(items, dedup=False, max_fanout=3) == ["a", "b", "a"]
    assert activated_items(items, dedup=False, max_fanout=None) == items


def test_a_reference_region_reserves_max_fanout_items() -> None:
    doc = base()
    fan = next(s for s in doc["steps"] if s["id"] == "fan")
    fan["fanout"] = {
        "over": "${steps.draft.output.items}",
        "chain": ["fan.one"],
        "max_fanout": 7,
        "concurrency": 2,
    }
    walk = {b.step_id: b for b in boundaries(load_plan(doc))}
    assert walk["fan"].reservation == Reservation(7, -(-7 * T // 2))


def test_terminal_routes_and_human_gates_reserve_no_redos() -> None:
    doc = base()
    review = next(s for s in doc["steps"] if s["id"] == "review")
    review.update(fail_route="terminal:rejected", max_redos=0)
    walk = {b.step_id: b for b in boundaries(load_plan(doc))}
    assert walk["review"].reservation == Reservation(1, T)
    assert walk["ok"].kind == "human_gate" and walk["ok"].reservation == Reservation(0, 0)
    assert walk["ask"].kind == "pause"


def test_a_tournament_reserves_its_worst_case_calls() -> None:
    plan = load_plan(base())
    step = plan.step("t")
    assert isinstance(step, TournamentStep)
    worst = tournament_plan(get_profile("quick")).worst_case_calls
    assert tournament_calls(step) == worst
    capped = step.model_copy(
        update={"tournament": step.tournament.model_copy(update={"max_calls": 5})}
    )
    assert tournament_calls(capped) == 5
    walk = {b.step_id: b for b in boundaries(plan)}
    assert walk["t"].reservation.invocations == worst


def test_unsatisfiable_names_the_worst_boundary() -> None:
    walk = boundaries(_loop_plan())
    found = unsatisfiable(walk, calls=6, wall_ms=None)
    assert found is not None and found[0].step_id == "review" and "at least 7" in found[1]
    assert unsatisfiable(walk, calls=7, wall_ms=None) is None
    wall = unsatisfiable(walk, calls=None, wall_ms=T)
    assert wall is not None and wall[0].step_id == "review"


def _ledger(calls: int | None = None, wall_ms: int | None = None) -> PlanLedger:
    return PlanLedger.start(plan_totals(_loop_plan()), calls=calls, wall_ms=wall_ms)


def test_the_ledger_builds_on_the_one_budget_model() -> None:
    ledger = _ledger()
    assert isinstance(ledger.budget, Budget)
    assert ledger.budget.limits.max_calls == 13 and ledger.calls_cap == 26
    again = PlanLedger.model_validate_json(ledger.model_dump_json())
    assert again == ledger


def test_a_boundary_that_does_not_fit_pauses_before_it() -> None:
    ledger = _ledger(calls=8)
    walk = boundaries(_loop_plan())
    for boundary in walk[:2]:
        assert ledger.need(boundary.step_id, boundary.reservation) is None
        ledger.open(boundary.step_id, boundary.reservation)
        ledger.spend(boundary.step_id)
        ledger.close()
    need = ledger.need("review", walk[2].reservation)  # 7 needed, 6 left
    assert need is not None
    assert (need.state, need.reason) == ("awaiting_budget", Reason.BUDGET_EXHAUSTED)
    assert "extend calls to at least 9" in need.detail
    assert ledger.need("approval", walk[3].reservation) is None  # a pause reserves nothing


def test_wall_clock_pauses_separately() -> None:
    ledger = _ledger(wall_ms=T)
    ledger.spend_wall(T // 2)
    need = ledger.need("code", Reservation(1, T))
    assert need is not None and need.state == "awaiting_wall_clock"


def test_tokens_and_usd_stop_new_reservations_once_reached() -> None:
    totals = plan_totals(_loop_plan())
    ledger = PlanLedger.start(totals, tokens=100, usd=0.5)
    ledger.open("plan", Reservation(1, T))
    ledger.spend("plan")
    ledger.budget.settle(input_tokens=80, output_tokens=20, usd=0.1, transport_retries=0)
    ledger.close()
    need = ledger.need("code", Reservation(2, 2 * T))
    assert need is not None and "tokens" in need.detail
    ledger.max_tokens = None
    ledger.budget.settle(input_tokens=0, output_tokens=0, usd=0.4, transport_retries=0)
    need = ledger.need("code", Reservation(2, 2 * T))
    assert need is not None and "USD" in need.detail


def test_a_spend_outside_a_reservation_is_an_invariant_failure() -> None:
    ledger = _ledger()
    with pytest.raises(BudgetInvariantViolated, match="no open reservation"):
        ledger.spend("plan")
    ledger.open("code", Reservation(2, 2 * T))
    ledger.spend("code")
    ledger.spend("code")
    with pytest.raises(BudgetInvariantViolated, match="past its reservation") as info:
        ledger.spend("code")
    assert info.value.reason == Reason.BUDGET_INVARIANT_VIOLATED
    with pytest.raises(BudgetInvariantViolated, match="still open"):
        ledger.open("review", Reservation(1, T))


def test_extensions_are_absolute_and_capped() -> None:
    ledger = _ledger(calls=3)
    ledger.open("code", Reservation(2, 2 * T))
    ledger.spend("code")
    ledger.spend("code")
    ledger.close()
    assert ledger.extend(calls=1, wall_ms=None)[0] == Reason.EXTENSION_BELOW_SPENT
    assert ledger.extend(calls=27, wall_ms=None)[0] == Reason.BUDGET_EXTENSION_EXHAUSTED
    too_long = ledger.wall_cap_ms + 1
    assert ledger.extend(calls=None, wall_ms=too_long)[0] == Reason.WALL_EXTENSION_EXHAUSTED
    assert ledger.budget.limits.max_calls == 3  # refused extensions change nothing
    reason, summary = ledger.extend(calls=26, wall_ms=None)
    assert reason is None and ledger.calls_left() == 24 and "calls=26" in summary
    assert [e.calls for e in ledger.extensions] == [26]


# -- the run ledger's rules with hand-computed values (what mutation testing found unpinned) --


def _bare(**limits: Any) -> PlanLedger:
    """calls=4 of a cap of 8, wall 1000 of a cap of 2000 ms, plus ``limits`` (max_usd=...)."""
    tokens = limits.pop("tokens", None)
    return PlanLedger(
        budget=Budget(limits=BudgetLimits(max_calls=4, **limits)),
        max_tokens=tokens,
        wall_limit_ms=1000,
        calls_cap=8,
        wall_cap_ms=2000,
    )


def test_each_pause_names_what_is_left_and_the_extension_that_fits() -> None:
    ledger = _bare()
    ledger.budget.spent.calls = 3
    assert ledger.need("s", Reservation(1, 0)) is None  # exactly what is left fits
    assert ledger.need("s", Reservation(2, 0)) == PauseNeed(
        "awaiting_budget",
        Reason.BUDGET_EXHAUSTED,
        "step 's' reserves 2 invocation(s) and 1 of 4 are left: extend calls to at least 5",
    )
    ledger.wall_spent_ms = 400
    assert ledger.need("s", Reservation(0, 600)) is None
    assert ledger.need("s", Reservation(0, 700)) == PauseNeed(
        "awaiting_wall_clock",
        Reason.BUDGET_EXHAUSTED,
        "step 's' reserves 700 ms of wall clock and 600 of 1000 ms are left: extend wall_ms to "
        "at least 1100",
    )


def test_tokens_and_usd_pause_a_boundary_that_calls_and_not_one_that_does_not() -> None:
    ledger = _bare(tokens=100, max_usd=0.5)
    ledger.budget.settle(input_tokens=60, output_tokens=39, usd=0.0, transport_retries=0)
    assert ledger.need("s", Reservation(1, 0)) is None  # 99 of 100 tokens
    ledger.budget.settle(input_tokens=0, output_tokens=1, usd=0.0, transport_retries=0)
    assert ledger.need("s", Reservation(0, 0)) is None  # a pause reserves no call
    assert ledger.need("s", Reservation(1, 0)) == PauseNeed(
        "awaiting_budget",
        Reason.BUDGET_EXHAUSTED,
        "100 tokens spent of 100: raise the token limit (extend tokens above 100)",
    )
    ledger.max_tokens = None
    ledger.budget.settle(input_tokens=0, output_tokens=0, usd=0.5, transport_retries=0)
    assert ledger.need("s", Reservation(0, 0)) is None
    assert ledger.need("s", Reservation(1, 0)) == PauseNeed(
        "awaiting_budget",
        Reason.BUDGET_EXHAUSTED,
        "0.5000 USD spent of 0.5: raise the USD limit (extend usd above 0.5000)",
    )


def test_the_invariant_failures_name_the_step_and_the_boundary() -> None:
    ledger = _bare()
    with pytest.raises(BudgetInvariantViolated) as none_open:
        ledger.spend("s")
    assert str(none_open.value) == (
        "step 's' tried to dispatch with no open reservation (none): the reservation "
        "arithmetic is wrong; this is a failure, never a pause"
    )
    ledger.open("b", Reservation(1, 10))
    ledger.spend("s")
    with pytest.raises(BudgetInvariantViolated) as past:
        ledger.spend("s")
    assert str(past.value) == (
        "step 's' tried to dispatch past its reservation (b): the reservation arithmetic is "
        "wrong; this is a failure, never a pause"
    )
    with pytest.raises(BudgetInvariantViolated) as twice:
        ledger.open("c", Reservation(1, 10))
    assert str(twice.value) == "boundary 'c' opened while 'b' is still open"
    assert ledger.budget.spent.calls == 1 and ledger.active is not None
    ledger.close()
    assert ledger.active is None
    for ms in (300, 200, -50):  # a negative clock reading adds nothing
        ledger.spend_wall(ms)
    assert ledger.wall_spent_ms == 500


def test_extensions_refuse_at_each_edge_with_the_fix() -> None:
    ledger = _bare(tokens=100, max_usd=1.0)
    ledger.budget.spent.calls = 2
    ledger.budget.settle(input_tokens=30, output_tokens=20, usd=0.25, transport_retries=0)
    ledger.wall_spent_ms = 400
    below, over = Reason.EXTENSION_BELOW_SPENT, Reason.BUDGET_EXTENSION_EXHAUSTED
    refused = [
        ({}, (below, "give calls, wall_ms, tokens or usd")),
        ({"tokens": 50}, (below, "tokens=50 is not above what is already spent (50, input + "
                                 "output): give more than 50")),
        ({"usd": 0.25}, (below, "usd=0.25 is not above what is already spent (0.25): give "
                                "more than 0.25")),
        ({"calls": 1}, (below, "max_calls=1 is below what is already spent (2): give at least 2")),
        ({"calls": 9}, (over, "calls=9 is over the extension cap 8 (max(2 x plan total, sum of "
                              "reservations))")),
        ({"wall_ms": 399}, (below, "wall_ms=399 is below what is already spent (400): give at "
                                   "least 400")),
        ({"wall_ms": 2001}, (Reason.WALL_EXTENSION_EXHAUSTED, "wall_ms=2001 is over the "
                             "extension cap 2000 (max(2 x plan wall, sum of wall reservations))")),
    ]  # fmt: skip
    for given, expected in refused:
        args: dict[str, Any] = {"calls": None, "wall_ms": None} | given
        assert ledger.extend(**args) == expected, given
    assert ledger.extensions == [] and ledger.limits_text() == (
        "calls=4, wall_ms=1000, tokens=100, usd=1"
    )
    # The edges themselves are allowed: every limit at once, then one alone.
    assert ledger.extend(calls=8, wall_ms=2000, tokens=51, usd=0.3) == (
        None,
        "limits now calls=8, wall_ms=2000, tokens=51, usd=0.3",
    )
    assert ledger.extend(calls=None, wall_ms=400) == (
        None,
        "limits now calls=8, wall_ms=400, tokens=51, usd=0.3",
    )
    assert ledger.extensions == [
        Extension(calls=8, wall_ms=2000, tokens=51, usd=0.3),
        Extension(wall_ms=400),
    ]
    assert (ledger.calls_left(), ledger.wall_left_ms()) == (6, 0)
    assert _bare().limits_text() == "calls=4, wall_ms=1000"
