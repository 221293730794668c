"""Rules that a mutation of the code once got past the suite: each is pinned here by a case
that fails when the rule is changed."""

from __future__ import annotations

import pytest

from workflows.plan.check_types import CelOutcome
from workflows.plan.model import MAX_STEPS
from workflows.plan.validate import validate_document
from workflows.plan_run.checks import _holds


def test_a_plan_over_its_step_ceiling_is_refused_before_its_steps_are_read() -> None:
    assert MAX_STEPS == 10_000
    steps = [{"id": f"s{i}", "kind": "set", "set": {"v": "1"}} for i in range(MAX_STEPS + 1)]
    errors = validate_document({"schema": "ponder-plan/1", "name": "big", "steps": steps}).errors
    assert [(e.code, e.path) for e in errors] == [("field.range", "steps")]
    assert f"got {MAX_STEPS + 1}" in errors[0].message


@pytest.mark.parametrize("value", [1, "true", [True], {"ok": True}, 1.0])
def test_an_ensure_holds_only_on_the_boolean_true(value: object) -> None:
    holds, shown = _holds(CelOutcome(ok=True, value=value))  # type: ignore[arg-type]
    assert holds is False and shown.startswith("evaluated to ")
    assert _holds(CelOutcome(ok=True, value=True)) == (True, "true")
    assert _holds(CelOutcome(ok=False, error="boom"))[0] is False
