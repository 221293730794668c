"""Direct unit tests of a plan's shape checks (workflows.plan.shape): error codes from pydantic's
types, the exact messages of pruned keys, ensure forms and step kinds."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan import shape
from workflows.plan.errors import PlanError
from workflows.plan.model import STEP_KINDS
from workflows.plan.shape import code_of, parse_step, prune, short

KINDS = ", ".join(STEP_KINDS)


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        ("missing", "field.missing"),
        ("extra_forbidden", "field.unknown"),
        ("finite_number", "value.not_finite"),
        ("literal_error", "field.choice"),
        ("enum", "field.choice"),
        ("union_tag_invalid", "field.choice"),
        ("string_pattern_mismatch", "field.pattern"),
        ("greater_than_equal", "field.range"),
        ("less_than", "field.range"),
        ("too_long", "field.range"),
        ("string_too_short", "field.range"),
        ("multiple_of", "field.range"),
        ("int_type", "field.type"),
        ("int_parsing", "field.type"),
        ("model_attributes_type", "field.type"),
        ("value_error", "field.invalid"),
        ("custom", "field.invalid"),
    ],
)
def test_code_of(kind: str, code: str) -> None:
    assert code_of({"type": kind, "msg": "x"}) == code


def test_code_of_an_unknown_field_raised_by_a_validator() -> None:
    assert code_of({"type": "value_error", "msg": "unknown field 'k'"}) == "field.unknown"
    assert code_of({}) == "field.invalid"


def test_short() -> None:
    assert short("é") == '"é"'
    assert short({"k": 1}) == '{"k": 1}'
    assert short("x" * 58) == '"' + "x" * 58 + '"'  # 60 characters: kept
    assert short("x" * 59) == '"' + "x" * 56 + "..."
    assert short({1j}) == '"{1j}"'


def test_prune_reports_what_it_drops() -> None:
    errors: list[PlanError] = []
    kept = prune(
        {"id": "a", "x-note": 1, "fanout": {}, "bogus": 2},
        {"id", "prompt"},
        "steps[0]",
        errors,
        kind="agent",
    )
    assert kept == {"id": "a", "x-note": 1}
    assert [(e.code, e.path, e.message) for e in errors] == [
        (
            "step.field_not_for_kind",
            "steps[0].fanout",
            "'fanout' belongs to fanout steps, not agent; fix: remove it or change the kind",
        ),
        (
            "field.unknown",
            "steps[0].bogus",
            "'bogus' is not a field here (fields: id, prompt; x-* keys are free-form); fix: "
            "remove it or correct its spelling",
        ),
    ]
    errors = []
    prune({"checkpoints": 1, "prompt": 2}, ["name"], "", errors)
    assert [(e.code, e.path, e.message) for e in errors] == [
        (
            "feature.not_available",
            "checkpoints",
            "'checkpoints' (checkpoints) is a part-2 plan feature this version does not run; "
            "fix: remove it",
        ),
        (
            "field.unknown",
            "prompt",
            "'prompt' is not a field here (fields: name; x-* keys are free-form); fix: remove it "
            "or correct its spelling",
        ),
    ]
    shared: list[PlanError] = []
    prune({"deps": []}, set(), "s", shared, kind="pause")
    assert shared[0].code == "step.field_not_for_kind"
    assert shared[0].message.startswith("'deps' belongs to agent/fanout/gate/pause/run/set/")


def step_errors(raw: Any) -> list[tuple[str, str, str]]:
    errors: list[PlanError] = []
    parse_step(raw, 2, errors, base="flows.f")
    return [(e.code, e.path, e.message) for e in errors]


def test_parse_step_refusals() -> None:
    assert step_errors("x") == [
        (
            "document.not_object",
            "flows.f.steps[2]",
            "a step must be a mapping; fix: write {id: ..., kind: ...}",
        )
    ]
    assert step_errors({"id": "a"}) == [
        ("field.missing", "flows.f.steps[2].kind", f"kind is required; fix: one of {KINDS}")
    ]
    assert step_errors({"id": "a", "kind": "loop"}) == [
        (
            "step.kind_unknown",
            "flows.f.steps[2].kind",
            f'kind "loop" is not a step kind; fix: one of {KINDS}',
        )
    ]
    assert step_errors({"id": "a", "kind": 3})[0][2] == (
        f"kind 3 is not a step kind; fix: one of {KINDS}"
    )
    assert step_errors({"id": "f", "kind": "fanout", "fanout": {"over": 5, "chain": ["m"]}}) == [
        (
            "fanout.over",
            "flows.f.steps[2].fanout.over",
            "over must be a list or one ${...} reference, got 5; fix: give a list of items or "
            "${steps.<id>.output}",
        )
    ]
    assert step_errors({"id": "a", "kind": "agent", "prompt": 5}) == [
        (
            "field.type",
            "flows.f.steps[2].prompt",
            "Input should be a valid string (got 5); fix: give a value of the type named",
        )
    ]


def test_parse_step_returns_the_step_and_its_id() -> None:
    errors: list[PlanError] = []
    step, sid = parse_step({"id": "a", "kind": "agent", "prompt": "p", "bogus": 1}, 0, errors)
    assert step is not None and step.id == "a" and sid == "a"  # valid once pruned
    assert [e.code for e in errors] == ["field.unknown"]
    step, sid = parse_step({"id": 5, "kind": "agent"}, 0, [])
    assert step is None and sid is None


def test_ensure_entries_are_one_form_each() -> None:
    raw = {
        "id": "a",
        "kind": "agent",
        "prompt": "p",
        "ensure": [{"expr": "true"}, {}, {"expr": "true", "file_exists": "f"}, "x", {"expr": 5}],
    }
    found = step_errors(raw)
    head = (
        "an ensure entry is exactly one of {expr: CEL}, {file_exists: PATH}, {file_contains: "
        "{path, text}}, {judged: {statement, model?, stakes?}} (got "
    )
    tail = "); fix: write one form per entry"
    assert found[:3] == [
        ("ensure.form", "flows.f.steps[2].ensure[1]", head + "an empty mapping" + tail),
        ("ensure.form", "flows.f.steps[2].ensure[2]", head + "expr, file_exists" + tail),
        ("ensure.form", "flows.f.steps[2].ensure[3]", head + '"x"' + tail),
    ]
    # the placeholders keep later entries at their indices
    assert [(c, p) for c, p, _ in found[3:]] == [("field.type", "flows.f.steps[2].ensure[4].expr")]


def test_a_part_2_kind_is_named_as_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    # no kind is part-2 only today; the rule holds for the next one
    monkeypatch.setitem(shape.PART2_KINDS, "loop", "loops")
    assert step_errors({"id": "a", "kind": "loop"}) == [
        (
            "feature.not_available",
            "flows.f.steps[2].kind",
            f"kind 'loop' (loops) is a part-2 plan feature this version does not run; fix: use "
            f"one of {KINDS}",
        )
    ]


def test_part_2_fields_are_named_as_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    # none is part-2 only today; the rules hold for the next ones
    monkeypatch.setitem(shape.PART2_FIELDS, "loopy", "loops")
    monkeypatch.setitem(shape.PART2_NESTED, ("retry", "backoff"), "retry backoff")
    errors: list[PlanError] = []
    kept = prune(
        {"id": "a", "loopy": 1, "retry": {"max_attempts": 2, "backoff": 3}},
        {"id", "retry"},
        "steps[1]",
        errors,
        kind="agent",
    )
    assert kept == {"id": "a", "retry": {"max_attempts": 2}}
    assert [(e.code, e.path, e.message) for e in errors] == [
        (
            "feature.not_available",
            "steps[1].loopy",
            "'loopy' (loops) is a part-2 plan feature this version does not run; fix: remove it",
        ),
        (
            "feature.not_available",
            "steps[1].retry.backoff",
            "retry.backoff (retry backoff) is a part-2 plan feature this version does not run; "
            "fix: remove it",
        ),
    ]
    # at the top level (no kind) neither applies: an unknown key is only unknown
    errors = []
    assert prune({"loopy": 1}, {"id"}, "", errors) == {}
    assert [e.code for e in errors] == ["field.unknown"]
