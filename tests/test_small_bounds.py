"""The pure rules behind the small bounds: nested ledgers' ceilings, a ``with`` value's depth,
and the size of one update's or signal's argument (the hostile cases are in
``tests/hostile/test_small_items.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from workflows.bounds import (
    MAX_BUDGET_TOKENS,
    MAX_BUDGET_USD,
    MAX_CALLS,
    MAX_MESSAGE_BYTES,
    MAX_WALL_MS,
)
from workflows.inputs import InputInvalid
from workflows.plan.consumer import MAX_RESULT_BYTES, StepDoneInput
from workflows.plan.flows import MAX_WITH_DEPTH, render_with
from workflows.plan.model import LedgerBudget, StepBudget
from workflows.plan.refs import RefError
from workflows.plan.validate import validate_document
from workflows.raw_input import decode_raw

CEILINGS = {
    "calls": MAX_CALLS,
    "tokens": MAX_BUDGET_TOKENS,
    "usd": MAX_BUDGET_USD,
    "wall_ms": MAX_WALL_MS,
}


@pytest.mark.parametrize("model", [LedgerBudget, StepBudget])
@pytest.mark.parametrize("field", sorted(CEILINGS))
def test_every_nested_ledger_takes_the_run_ledgers_ceilings(
    model: type[LedgerBudget], field: str
) -> None:
    ceiling = CEILINGS[field]
    assert getattr(model.model_validate({field: ceiling}), field) == ceiling
    over: Any = 1e308 if field == "usd" else ceiling + 1
    with pytest.raises(ValidationError, match="less than or equal to"):
        model.model_validate({field: over})


def _nested(depth: int, leaf: Any = "x", *, mapping: bool = False) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"k": value} if mapping else [value]
    return value


def _plan(value: Any) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": "deep",
        "flows": {"f": {"steps": [{"id": "a", "kind": "set", "set": {"v": "input.v"}}]}},
        "steps": [{"id": "r", "kind": "run", "flow": "f", "with": {"v": value}}],
    }


@pytest.mark.parametrize("mapping", [False, True])
def test_a_with_value_past_the_depth_render_takes_is_refused_at_validation(
    mapping: bool,
) -> None:
    fits = _nested(MAX_WITH_DEPTH, mapping=mapping)
    assert validate_document(_plan(fits)).ok
    render_with({"v": fits}, inputs={}, outputs={}, fields=None, contracts={})
    for depth in (MAX_WITH_DEPTH + 1, 40, 200):
        deep = _nested(depth, mapping=mapping)
        result = validate_document(_plan(deep))
        assert [(e.code, e.path) for e in result.errors] == [
            ("flow.with_too_deep", "steps[0].with.v")
        ]
        assert result.plan is None
    # What validation refuses is exactly what rendering would fail on at run time.
    with pytest.raises(RefError, match="nested deeper"):
        render_with(
            {"v": _nested(MAX_WITH_DEPTH + 1, mapping=mapping)},
            inputs={},
            outputs={},
            fields=None,
            contracts={},
        )


def _raw(data: bytes) -> RawValue:
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=data))


def test_an_update_or_signal_argument_over_the_message_bound_is_refused_before_parsing() -> None:
    assert MAX_MESSAGE_BYTES < 2 * 1024 * 1024  # under Temporal's own payload limit
    assert MAX_RESULT_BYTES + 64 * 1024 < MAX_MESSAGE_BYTES  # a result fits with its envelope
    ok = b'{"step":"b","token":"t","result":{"output":"' + b"x" * 1000 + b'"}}'
    assert isinstance(decode_raw(StepDoneInput, _raw(ok)), StepDoneInput)
    over = b'{"step":"b","token":"t","result":{"output":"' + b"x" * MAX_MESSAGE_BYTES + b'"}}'
    refused = decode_raw(StepDoneInput, _raw(over))
    assert isinstance(refused, InputInvalid)
    assert refused.code == "input.invalid"
    assert f"{len(over)} bytes, over the {MAX_MESSAGE_BYTES}-byte limit" in refused.message
    garbage = b"[" * (MAX_MESSAGE_BYTES + 1)  # not parsed at all: the size is checked first
    refused = decode_raw(StepDoneInput, _raw(garbage))
    assert isinstance(refused, InputInvalid) and "byte limit" in refused.message
