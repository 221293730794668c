"""Direct unit tests of nested ledgers (workflows.plan.ledgers): room beside children in flight,
and the call check of a per-dispatch ledger."""

from __future__ import annotations

from workflows.plan.boundaries import Reservation
from workflows.plan.ledgers import Ledgers, NestedLedger
from workflows.plan.model import LedgerBudget, Plan


def subflow(calls: int, wall_ms: int) -> Ledgers:
    return Ledgers(
        nested={
            "r": NestedLedger(
                owner="r", scope="subflow", limits=LedgerBudget(calls=calls, wall_ms=wall_ms)
            )
        }
    )


def test_room_beside_counts_what_is_in_flight() -> None:
    ledgers = subflow(5, 1000)
    one = Reservation(1, 100)
    assert ledgers.room_beside("r", Reservation(5, 1000), [])  # nothing beside: check decides
    assert ledgers.room_beside(None, Reservation(99, 99_999), [one])
    assert ledgers.room_beside("other", Reservation(99, 99_999), [one])
    assert ledgers.room_beside("r", Reservation(3, 700), [one, one])  # 5 calls, 900 ms
    assert not ledgers.room_beside("r", Reservation(4, 100), [one, one])  # 6 calls
    assert not ledgers.room_beside("r", Reservation(1, 801), [one, one])  # 1,001 ms
    assert ledgers.room_beside("r", Reservation(1, 800), [one, one])  # 1,000 ms: exactly


def test_a_per_dispatch_ledger_checks_each_call_and_its_timeout() -> None:
    plan = Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [{"id": "r", "kind": "run", "flow": "f", "budget": {"calls": 1}}],
            "flows": {"f": {"steps": [{"id": "c", "kind": "agent", "prompt": "x"}]}},
        }
    )
    ledgers = Ledgers.for_plan(plan)
    ledgers.reference_rules()
    assert ledgers.call_wall_ms == {"r/c": 900_000}
    assert ledgers.before_call("r/c") is None
    ledgers.spend("r/c")
    refused = ledgers.before_call("r/c")
    assert refused is not None and refused.owner == "r"
    assert refused.detail == "1 invocation(s) needed and 0 of calls=1 left"
    # a covered id without a recorded call timeout reserves no wall clock
    timed = subflow(2, 10)
    timed.reference_rules()
    timed.covers["r/x"] = ["r"]
    assert timed.before_call("r/x") is None
    assert timed.before_call("unknown") is None
