"""The coded notes of ``ponder plan validate``: every note starts with a code from the one table,
and a token or USD limit anywhere in a plan is noted once, naming where."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan.model import Plan
from workflows.plan.note_codes import NOTE_CODES, note
from workflows.plan.run_notes import limit_notes
from workflows.plan.validate import load_plan


def _plan(*steps: dict[str, Any], **top: Any) -> Plan:
    return load_plan({"schema": "ponder-plan/1", "name": "n", "steps": list(steps)} | top)


def _agent(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "kind": "agent", "prompt": f"Do {step_id}."} | fields


def test_a_note_starts_with_its_code() -> None:
    assert note("runs-alone", "x runs alone") == "runs-alone: x runs alone"


def test_an_unknown_code_is_a_bug_here() -> None:
    with pytest.raises(KeyError, match="no-such-note"):
        note("no-such-note", "text")


def test_every_code_is_kebab_case_with_a_meaning() -> None:
    for code, meaning in NOTE_CODES.items():
        assert code.replace("-", "").isalpha() and code == code.lower() and "-" in code, code
        assert len(meaning) > 20, code


def test_no_limit_no_note() -> None:
    assert limit_notes(_plan(_agent("a"))) == []
    assert limit_notes(_plan(_agent("a"), budget={"calls": 3, "wall_ms": 2_000_000})) == []
    assert limit_notes(_plan(_agent("a", budget={"calls": 2}))) == []


@pytest.mark.parametrize("limit", [{"tokens": 100}, {"usd": 0.5}])
def test_a_plan_limit_is_noted_once(limit: dict[str, Any]) -> None:
    (only,) = limit_notes(_plan(_agent("a"), _agent("b"), budget=limit))
    assert only.startswith("limit-stops-at-reached: token or USD limits (plan): ")
    assert "(>=)" in only and "(<=)" in only


def test_every_ledger_with_a_limit_is_named_in_one_note() -> None:
    plan = _plan(
        _agent("a", budget={"tokens": 50}),
        _agent("b", budget={"calls": 1}),
        {"id": "r", "kind": "run", "flow": "f", "budget": {"usd": 1}},
        budget={"usd": 2},
        flows={"f": {"steps": [_agent("inner", budget={"tokens": 10})]}},
    )
    (only,) = limit_notes(plan)
    assert "(plan, step a, step r, flow f step inner)" in only
