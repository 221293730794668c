"""The three-ledger arithmetic, directly (workflows/plan/ledgers.py): pure, microseconds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.plan.boundaries import Reservation
from workflows.plan.ledger import BudgetInvariantViolated
from workflows.plan.ledgers import Ledgers, NestedLedger
from workflows.plan.model import LedgerBudget
from workflows.plan.validate import load_plan


def plan(**flows: Any) -> Any:
    return load_plan(
        {
            "schema": "ponder-plan/1",
            "name": "l",
            "flows": {"f": {"steps": [
                {"id": "a", "kind": "agent", "prompt": "a", "budget": {"calls": 2}},
                {"id": "b", "kind": "agent", "prompt": "b"},
            ]}},
            "steps": [
                {"id": "top", "kind": "agent", "prompt": "t", "budget": {"usd": 1.0}},
                {"id": "r", "kind": "run", "flow": "f", "budget": {"calls": 3}},
                {"id": "q", "kind": "run", "flow": "f"},
                {"id": "fan", "kind": "fanout", "budget": {"tokens": 10},
                 "fanout": {"over": [1, 2], "chain": ["fan.one"]}},
                {"id": "fan.one", "kind": "agent", "prompt": "one"},
            ],
            **flows,
        }
    )  # fmt: skip


def test_each_invocation_is_covered_innermost_first() -> None:
    ledgers = Ledgers.for_plan(plan())
    assert {k: v.scope for k, v in ledgers.nested.items()} == {
        "top": "step", "r": "subflow", "r/a": "step", "q/a": "step", "fan": "step",
    }  # fmt: skip
    assert ledgers.covers == {
        "top": ["top"],
        "r/a": ["r/a", "r"],  # the child's own ledger, then its sub-flow's
        "r/b": ["r"],
        "q/a": ["q/a"],  # the same flow called without a budget: the child's own only
        "fan.one": ["fan"],  # a chain member spends in its fan-out's
    }
    assert ledgers.own("fan.one") is None and ledgers.own("r") is None


def test_the_innermost_refusal_wins() -> None:
    ledgers = Ledgers.for_plan(plan())
    step, sub = ledgers.nested["r/a"], ledgers.nested["r"]
    sub.calls = 3  # the sub-flow's ledger is spent, and so is the step's
    step.calls = 2
    checks, holds = ledgers.for_boundary("r/a", "r", plan().flows["f"].steps[0], Reservation(1, 0))
    assert [o for o, _ in checks] == ["r/a", "r"] and [o for o, _ in holds] == ["r"]
    exhausted = ledgers.check(checks)
    assert exhausted is not None and exhausted.owner == "r/a"
    assert exhausted.reason == "step-budget-exhausted"
    step.calls = 0
    exhausted = ledgers.check(checks)
    assert exhausted is not None and exhausted.reason == "subflow-budget-exhausted"


def test_settling_past_a_limit_records_it_and_stops_the_next_call() -> None:
    ledgers = Ledgers.for_plan(plan())
    fan = ledgers.nested["fan"]
    fan.hold(Reservation(2, 0))
    assert ledgers.before_call("fan.one") is None
    ledgers.spend("fan.one")
    ledgers.settle("fan.one", tokens=25, usd=0.5, wall_ms=30)  # over tokens=10: still recorded
    assert (fan.calls, fan.tokens, fan.wall_ms) == (1, 25, 30)
    stopped = ledgers.before_call("fan.one")
    assert stopped is not None and "25 tokens spent of tokens=10" in stopped.detail
    assert fan.refusal(Reservation(0, 0)) is not None  # and the next reservation


def test_a_spend_outside_what_is_held_is_an_invariant_violation() -> None:
    ledger = NestedLedger(owner="s", scope="step", limits=LedgerBudget(calls=5))
    with pytest.raises(BudgetInvariantViolated, match="with nothing held"):
        ledger.spend("s")
    ledger.hold(Reservation(1, 0))
    ledger.spend("s")
    with pytest.raises(BudgetInvariantViolated, match="past what it holds"):
        ledger.spend("s")
    ledger.release()
    assert ledger.held is None and ledger.calls == 1


@settings(max_examples=300, deadline=None)
@given(
    limit=st.integers(1, 30),
    occurrences=st.lists(
        st.tuples(st.integers(1, 5), st.integers(0, 5), st.integers(0, 50)), max_size=30
    ),
)
def test_calls_and_wall_are_hard_limits(
    limit: int, occurrences: list[tuple[int, int, int]]
) -> None:
    """Whatever the occurrences ask and spend, a ledger that reserves before each never
    spends past ``calls`` or ``wall_ms``, and refuses only what does not fit."""
    ledger = NestedLedger(
        owner="s", scope="step", limits=LedgerBudget(calls=limit, wall_ms=limit * 10)
    )
    for w, used, wall in occurrences:
        res = Reservation(w, w * 10)
        why = ledger.refusal(res)
        fits = w <= limit - ledger.calls and w * 10 <= limit * 10 - ledger.wall_ms
        assert (why is None) == fits
        if why is not None:
            continue
        ledger.hold(res)
        for _ in range(min(used, w)):
            ledger.spend("s")
        ledger.settle(tokens=0, usd=0.0, wall_ms=min(wall, w * 10))
        ledger.release()
        assert ledger.calls <= limit and ledger.wall_ms <= limit * 10
