"""The three-ledger arithmetic, directly (workflows/plan/ledgers.py): pure, microseconds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows.plan.boundaries import DEFAULT_STAGE_TIMEOUT_MS, Reservation
from workflows.plan.ledger import BudgetInvariantViolated
from workflows.plan.ledgers import Exhausted, Ledgers, NestedLedger
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


def test_a_set_child_is_skipped_and_the_children_after_it_still_covered() -> None:
    doc = load_plan(
        {
            "schema": "ponder-plan/1",
            "name": "l",
            "flows": {"f": {"steps": [
                {"id": "s", "kind": "set", "set": {"n": "1"}},
                {"id": "a", "kind": "agent", "prompt": "a", "deps": ["s"],
                 "budget": {"calls": 2}},
            ]}},
            "steps": [{"id": "r", "kind": "run", "flow": "f", "budget": {"calls": 3}}],
        }
    )  # fmt: skip
    ledgers = Ledgers.for_plan(doc)
    assert {k: v.scope for k, v in ledgers.nested.items()} == {"r": "subflow", "r/a": "step"}
    assert ledgers.covers == {"r/a": ["r/a", "r"]}  # nothing for r/s: it dispatches nothing


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


# -- each rule with its hand-computed values (what mutation testing found unpinned) ----------


def test_refusals_and_stops_say_what_is_left_at_the_edge() -> None:
    ledger = NestedLedger(
        owner="s", scope="step", limits=LedgerBudget(calls=5, wall_ms=100, tokens=10, usd=0.5)
    )
    ledger.calls, ledger.wall_ms = 2, 30
    assert ledger.refusal(Reservation(3, 70)) is None  # exactly what is left fits
    assert ledger.refusal(Reservation(4, 0)) == "4 invocation(s) needed and 3 of calls=5 left"
    assert ledger.refusal(Reservation(3, 71)) == (
        "71 ms of wall clock needed and 70 of wall_ms=100 left"
    )
    ledger.tokens, ledger.usd = 9, 0.49
    assert ledger.stop() is None
    ledger.tokens = 10  # reaching the limit stops the next call
    assert ledger.stop() == "10 tokens spent of tokens=10"
    assert ledger.refusal(Reservation(0, 0)) == "10 tokens spent of tokens=10"
    ledger.tokens, ledger.usd = 0, 0.5
    assert ledger.stop() == "0.500000 USD spent of usd=0.5"


def test_spend_and_settle_accumulate_and_name_the_step() -> None:
    ledger = NestedLedger(owner="own", scope="subflow", limits=LedgerBudget(calls=5))
    with pytest.raises(BudgetInvariantViolated) as nothing:
        ledger.spend("r/a")
    assert str(nothing.value) == (
        "step 'r/a' tried to spend in the subflow ledger of 'own' with nothing held: the "
        "reservation arithmetic is wrong; this is a failure, never a pause"
    )
    ledger.hold(Reservation(2, 0))
    ledger.spend("r/a")
    ledger.spend("r/a")
    assert (ledger.calls, ledger.held) == (2, 0)
    with pytest.raises(BudgetInvariantViolated) as past:
        ledger.spend("r/a")
    assert str(past.value) == (
        "step 'r/a' tried to spend in the subflow ledger of 'own' past what it holds: the "
        "reservation arithmetic is wrong; this is a failure, never a pause"
    )
    ledger.settle(tokens=5, usd=0.25, wall_ms=7)
    ledger.settle(tokens=5, usd=0.25, wall_ms=7)
    ledger.settle(tokens=0, usd=0.0, wall_ms=0)  # a call that cost nothing adds nothing
    ledger.settle(tokens=-3, usd=-1.0, wall_ms=-2)  # nor does a negative report
    assert (ledger.tokens, ledger.usd, ledger.wall_ms) == (10, 0.5, 14)


def test_an_exhausted_ledger_names_its_scope_owner_and_step() -> None:
    step = Exhausted("r/a", "step", "4 invocation(s) needed and 3 of calls=5 left")
    assert step.reason == "step-budget-exhausted"
    assert step.message("r/a") == (
        "r/a: the step ledger of 'r/a' is exhausted (4 invocation(s) needed and 3 of calls=5 "
        "left); nothing was dispatched, and it is not retried"
    )
    sub = Exhausted("r", "subflow", "x")
    assert sub.reason == "subflow-budget-exhausted"
    assert sub.message("r/b") == (
        "r/b: the sub-flow ledger of 'r' is exhausted (x); nothing was dispatched, and it is "
        "not retried"
    )


def test_each_boundary_checks_and_holds_exactly_its_ledgers() -> None:
    doc = plan()
    ledgers = Ledgers.for_plan(doc)
    a, b = doc.flows["f"].steps
    res = Reservation(3, 9)
    one = Reservation(1, DEFAULT_STAGE_TIMEOUT_MS)  # one occurrence of a default agent step
    assert ledgers.for_boundary("top", None, doc.step("top"), res) == ([("top", one)], [])
    assert ledgers.for_boundary("fan", None, doc.step("fan"), res) == (
        [("fan", res)],
        [("fan", res)],
    )
    assert ledgers.for_boundary("r/a", "r", a, res) == ([("r/a", one), ("r", res)], [("r", res)])
    assert ledgers.for_boundary("r/b", "r", b, res) == ([("r", res)], [("r", res)])
    assert ledgers.for_boundary("q/a", "q", a, res) == ([("q/a", one)], [])  # q has no budget
    assert ledgers.for_boundary("q/b", "q", b, res) == ([], [])
    assert ledgers.check([("nobody", res)]) is None  # an owner without a ledger asks nothing
    ledgers.nested["r"].calls = 3
    assert ledgers.check([("r/a", one), ("r", res)]) == Exhausted(
        "r", "subflow", "3 invocation(s) needed and 0 of calls=3 left"
    )


def test_only_covering_ledgers_see_a_call() -> None:
    ledgers = Ledgers.for_plan(plan())
    for sid in ("nobody", "q/b"):  # no covering ledger: nothing to refuse, spend or settle
        assert ledgers.before_call(sid) is None
        ledgers.spend(sid)
        ledgers.settle(sid, tokens=99, usd=9.0, wall_ms=99)
    assert all(n.tokens == 0 and n.calls == 0 for n in ledgers.nested.values())
    with pytest.raises(BudgetInvariantViolated, match=r"step 'fan\.one' tried to spend"):
        ledgers.spend("fan.one")  # its fan-out's ledger holds nothing yet
    ledgers.settle("fan.one", tokens=10, usd=0.0, wall_ms=0)
    assert ledgers.before_call("fan.one") == Exhausted(
        "fan", "step", "10 tokens spent of tokens=10"
    )
    assert ledgers.hold([("fan", Reservation(2, 0)), ("nobody", Reservation(1, 0))]) == ["fan"]
    assert ledgers.nested["fan"].held == 2
    ledgers.release(["fan", "nobody"])
    assert ledgers.nested["fan"].held is None
