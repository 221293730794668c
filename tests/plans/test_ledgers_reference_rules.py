"""The reference's nested-ledger rules and the consumer notes, directly (pure, microseconds):
``Ledgers.reference_rules`` / ``fresh`` and ``run_notes.consumer_notes``."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan.boundaries import DEFAULT_STAGE_TIMEOUT_MS, Reservation
from workflows.plan.ledger import BudgetInvariantViolated
from workflows.plan.ledgers import Ledgers
from workflows.plan.model import AgentStep
from workflows.plan.run_notes import consumer_notes
from workflows.plan.validate import load_plan, validate_document

FLOW = {"steps": [
    {"id": "a", "kind": "agent", "prompt": "a", "budget": {"calls": 1}},
    {"id": "b", "kind": "agent", "prompt": "b", "timeout_ms": 1000, "idempotent": True,
     "retry": {"max_attempts": 2, "on": ["malformed-output"]}},
]}  # fmt: skip


def _plan(calls: int = 2, wall_ms: int | None = None) -> Any:
    budget: dict[str, int] = {"calls": calls}
    if wall_ms is not None:
        budget["wall_ms"] = wall_ms
    return load_plan(
        {
            "schema": "ponder-plan/1",
            "name": "l",
            "flows": {"f": FLOW},
            "steps": [
                {"id": "top", "kind": "agent", "prompt": "t", "budget": {"calls": 1}},
                {"id": "r", "kind": "run", "flow": "f", "deps": ["top"], "budget": budget},
            ],
        }
    )


def _ledgers(**budget: Any) -> Ledgers:
    ledgers = Ledgers.for_plan(_plan(**budget))
    ledgers.reference_rules()
    return ledgers


def _child(plan: Any, step_id: str) -> AgentStep:
    step = next(s for s in plan.flows["f"].steps if s.id == step_id)
    assert isinstance(step, AgentStep)
    return step


def test_only_subflow_ledgers_reserve_per_dispatch() -> None:
    ledgers = _ledgers()
    assert {o: n.per_dispatch for o, n in ledgers.nested.items()} == {
        "top": False, "r": True, "r/a": False,
    }  # fmt: skip
    assert ledgers.call_wall_ms == {"r/a": DEFAULT_STAGE_TIMEOUT_MS, "r/b": 1000}


def test_a_per_dispatch_ledger_checks_the_first_call_and_holds_nothing() -> None:
    plan = _plan()
    ledgers = _ledgers()
    ledgers.nested["r"].calls = 1  # r/a spent its one call
    b = _child(plan, "b")
    checks, holds = ledgers.for_boundary("r/b", "r", b, Reservation(2, 2000))
    assert checks == [("r", Reservation(1, 1000))] and holds == []
    assert ledgers.check(checks) is None
    # The old rule asks for the whole worst case, which no longer fits.
    old = Ledgers.for_plan(plan)
    old.nested["r"].calls = 1
    old_checks, old_holds = old.for_boundary("r/b", "r", b, Reservation(2, 2000))
    assert old_checks == old_holds == [("r", Reservation(2, 2000))]
    refused = old.check(old_checks)
    assert refused is not None and refused.reason == "subflow-budget-exhausted"


def test_each_call_is_reserved_just_before_it() -> None:
    ledgers = _ledgers()
    assert ledgers.before_call("r/b") is None
    ledgers.spend("r/b")
    ledgers.spend("r/b")  # no hold: each spend was asked for by before_call
    refused = ledgers.before_call("r/b")
    assert refused is not None and refused.owner == "r" and refused.scope == "subflow"
    assert refused.detail == "1 invocation(s) needed and 0 of calls=2 left"


def test_a_per_dispatch_ledger_reserves_each_calls_timeout() -> None:
    ledgers = _ledgers(wall_ms=DEFAULT_STAGE_TIMEOUT_MS + 1500)
    ledgers.nested["r"].settle(tokens=0, usd=0.0, wall_ms=DEFAULT_STAGE_TIMEOUT_MS)
    assert ledgers.before_call("r/b") is None  # 1500 ms left, b's call may take 1000
    refused = ledgers.before_call("r/a")  # a's call may take the whole stage timeout
    assert refused is not None and "ms of wall clock needed" in refused.detail


def test_a_boundary_ledger_still_refuses_a_spend_past_what_it_holds() -> None:
    ledgers = _ledgers()
    with pytest.raises(BudgetInvariantViolated):
        ledgers.spend("r/a")  # the step's own ledger holds per occurrence: nothing held


def test_fresh_renews_the_step_ledgers_of_reset_steps_and_their_bodies_only() -> None:
    ledgers = _ledgers()
    for owner in ("top", "r", "r/a"):
        ledgers.nested[owner].calls = 1
        ledgers.nested[owner].tokens = 7
    assert ledgers.fresh(["top", "r"]) == ["top", "r/a"]
    assert (ledgers.nested["top"].calls, ledgers.nested["top"].tokens) == (0, 0)
    assert ledgers.nested["r/a"].calls == 0 and ledgers.nested["r/a"].limits.calls == 1
    assert (ledgers.nested["r"].calls, ledgers.nested["r"].tokens) == (1, 7)  # keeps counting
    assert ledgers.fresh(["r/a"]) == ["r/a"]  # a revise inside the body names the child
    assert ledgers.fresh(["elsewhere"]) == []


def test_fresh_does_nothing_for_a_run_recorded_before_the_rule() -> None:
    ledgers = Ledgers.for_plan(_plan())
    ledgers.nested["top"].calls = 1
    assert ledgers.fresh(["top"]) == [] and ledgers.nested["top"].calls == 1


def test_a_subflow_budget_below_one_childs_worst_case_is_still_refused() -> None:
    run: dict[str, Any] = {"id": "r", "kind": "run", "flow": "f", "budget": {"calls": 1}}
    doc = {"schema": "ponder-plan/1", "name": "l", "flows": {"f": FLOW}, "steps": [run]}
    checked = validate_document(doc)
    (error,) = checked.errors
    assert (error.code, error.path) == ("budget.unsatisfiable", "steps[0].budget.calls")
    assert "r/b" in error.message and "2 invocation(s)" in error.message
    assert validate_document(doc | {"steps": [run | {"budget": {"calls": 2}}]}).ok


def _consumer(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "kind": "agent", "prompt": "p", "dispatch": "consumer"} | fields


@pytest.mark.parametrize(
    ("fields", "retry", "timeout"),
    [
        ({}, True, True),
        ({"timeout_ms": 5000}, True, False),
        ({"idempotent": True, "retry": {"max_attempts": 3, "on": ["transport"]}}, False, True),
        ({"idempotent": True, "retry": {"max_attempts": 3, "on": ["timeout"]}}, True, True),
        ({"retry": {"max_attempts": 1, "on": ["transport"]}}, True, True),
    ],
)
def test_a_consumer_note_says_which_default_the_step_keeps(
    fields: dict[str, Any], retry: bool, timeout: bool
) -> None:
    plan = load_plan({"schema": "ponder-plan/1", "name": "n", "steps": [_consumer("c", **fields)]})
    (note,) = consumer_notes(plan)
    assert note.startswith("consumer-defaults: step c (dispatch: consumer): ")
    assert ("is not retried" in note) is retry
    assert ("900000 ms" in note and "set timeout_ms" in note) is timeout


def test_no_note_for_a_consumer_step_that_chose_both_or_an_engine_step() -> None:
    chosen = _consumer(
        "c", timeout_ms=5000, idempotent=True, retry={"max_attempts": 2, "on": ["transport"]}
    )
    engine = {"id": "e", "kind": "agent", "prompt": "p"}
    plan = load_plan({"schema": "ponder-plan/1", "name": "n", "steps": [chosen, engine]})
    assert consumer_notes(plan) == []
