"""Direct unit tests of the document-level messages and ordering of ``validate_document`` and
``validate_text`` (workflows.plan.validate)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plans.test_validate import _loop
from workflows.plan.errors import PlanInvalid
from workflows.plan.validate import _under, load_plan, validate_document, validate_text


def agent(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "x", **fields}


def found(doc: Any) -> tuple[str | None, list[tuple[str, str, str]]]:
    result = validate_document(doc)
    return result.form, [(e.code, e.path, e.message) for e in result.errors]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            [1],
            (
                None,
                [
                    (
                        "document.not_object",
                        "",
                        "a plan is a mapping; fix: start with schema: ponder-plan/1",
                    )
                ],
            ),
        ),
        (
            {"schema": "x"},
            (
                None,
                [
                    (
                        "schema.unknown",
                        "schema",
                        'schema "x" is not a plan form; fix: schema: ponder-plan/1 (or loop-plan/1 '
                        "for the reference's form)",
                    )
                ],
            ),
        ),
        (
            {"schema": "ponder-plan/1", "name": "p"},
            ("ponder-plan/1", [("field.missing", "steps", "steps is required; fix: add a list")]),
        ),
        (
            {"schema": "ponder-plan/1", "name": "p", "steps": {}},
            (
                "ponder-plan/1",
                [("field.type", "steps", "steps must be a list of steps; fix: steps: [...]")],
            ),
        ),
        (
            {"schema": "ponder-plan/1", "name": "p", "steps": []},
            (
                "ponder-plan/1",
                [("field.range", "steps", "a plan has 1 to 10000 steps (got 0); fix: adjust it")],
            ),
        ),
    ],
)
def test_document_level_refusals(doc: Any, expected: Any) -> None:
    assert found(doc) == expected


def test_plan_level_errors_come_before_step_errors() -> None:
    doc = {"schema": "ponder-plan/1", "steps": [agent("a", deps=["b"]), agent("b")], "name": 5}
    assert [(c, p) for c, p, _m in found(doc)[1]] == [
        ("field.type", "name"),
        ("deps.not_earlier", "steps[0].deps[0]"),
    ]
    later = {
        "schema": "ponder-plan/1",
        "name": "p",
        "bogus": 1,
        "steps": [agent("a", deps=["c"]), agent("b", deps=["c"]), agent("c")],
    }
    assert [p for _, p, _m in found(later)[1]] == ["bogus", "steps[0].deps[0]", "steps[1].deps[0]"]


def test_a_valid_plan_gets_its_notes() -> None:
    result = validate_document(
        {"schema": "ponder-plan/1", "name": "p", "steps": [agent("a", dispatch="consumer")]}
    )
    assert result.ok and len(result.notes) == 1
    assert result.notes[0].startswith("consumer-defaults: step a (dispatch: consumer): ")


def test_text_errors_are_not_repeated_below_their_path() -> None:
    text = (
        '{"schema": "ponder-plan/1", "name": "p", "budget": {"usd": NaN}, '
        '"steps": [{"id": "a", "kind": "agent", "prompt": "x", "timeout_ms": NaN}]}'
    )
    result = validate_text(text)
    assert result.form == "ponder-plan/1" and result.plan is None
    assert [(e.code, e.path) for e in result.errors] == [
        ("value.not_finite", "budget.usd"),
        ("value.not_finite", "steps[0].timeout_ms"),
    ]
    assert validate_text("[1, NaN]").form is None


def test_under() -> None:
    assert _under("a", "a") and _under("a.b", "a") and _under("a[1]", "a")
    assert not _under("ab", "a") and not _under("b.a", "a")


def test_load_plan_raises_with_every_error() -> None:
    plan = load_plan({"schema": "ponder-plan/1", "name": "p", "steps": [agent("a")]})
    assert plan.steps[0].id == "a"
    text = "schema: ponder-plan/1\nname: p\nsteps: [{id: a, kind: agent, prompt: x}]\n"
    assert load_plan(text).name == "p"
    with pytest.raises(PlanInvalid) as caught:
        load_plan({"schema": "ponder-plan/1", "name": "p", "steps": [], "bogus": 1})
    assert [e.code for e in caught.value.errors] == ["field.unknown", "field.range"]


def test_a_plan_over_the_expression_ceiling_is_refused_as_its_form() -> None:
    text = "1 == 1" + " " * 300
    steps = [agent("a", ensure=[{"expr": text + f"{n}"} for n in range(53)])]
    result = validate_document({"schema": "ponder-plan/1", "name": "p", "steps": steps})
    assert result.form == "ponder-plan/1" and result.plan is None
    assert [(e.code, e.path) for e in result.errors] == [("expr.too_complex", "steps")]


def test_a_loop_plans_errors_keep_their_messages_at_the_authors_paths() -> None:
    doc = _loop()
    doc["fanouts"][0]["maxFanout"] = 0
    assert [(e.code, e.path, e.message) for e in validate_document(doc).errors] == [
        (
            "field.range",
            "fanouts[0].maxFanout",
            "Input should be greater than or equal to 1 (got 0); fix: stay within the bound named",
        )
    ]


def test_a_loop_plan_without_trace_emit_is_valid_with_a_note() -> None:
    doc = _loop()
    doc["trace"] = {"emit": False}
    result = validate_document(doc)
    assert result.ok
    assert result.notes == [
        "trace-emit-required: trace.emit is not true: a run refuses this loop-plan/1 plan "
        "(trace-emit-required); fix: add trace: {emit: true}"
    ]
