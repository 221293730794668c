"""Direct tests of input JSON Schemas: the flattened meta-schema, the step meter at its limit,
pointers with escapes, and the refusal texts."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from workflows.json_schemas import (
    DRAFT_2020_12,
    MAX_CHECK_STEPS,
    SchemaProblem,
    _flat_meta_schema,
    schema_problems,
    value_problem,
)

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}},
    {"type": "strng"},
    {"minimum": "zero"},
    {"properties": {"a": 3}},
    {"items": {"enum": "not a list"}},
    {"anyOf": []},
    {"$defs": {"x": {"type": ["integer", "null"]}}, "$ref": "#/$defs/x"},
    {"not": {"required": [1]}},
    True,
    {"if": {"const": 1}, "then": {"maxItems": -1}},
]


def test_the_flat_meta_schema_judges_schemas_as_the_library_s_own_does() -> None:
    flat = _flat_meta_schema()
    assert flat["type"] == ["object", "boolean"]
    assert '"$dynamicRef": "#meta"' not in json.dumps(flat)
    assert {"properties", "type", "minimum", "$ref", "$defs", "anyOf"} <= set(flat["properties"])
    ours = Draft202012Validator(flat)
    stock = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    verdicts = [(ours.is_valid(s), stock.is_valid(s)) for s in SCHEMAS]
    assert [a for a, _ in verdicts] == [b for _, b in verdicts]
    assert [a for a, _ in verdicts] == [
        True,
        False,
        False,
        False,
        False,
        False,
        True,
        False,
        True,
        False,
    ]
    assert not ours.is_valid(3)


def test_the_meter_allows_exactly_its_steps() -> None:
    # an enum costs its length; nothing else is checked when the value is in it
    assert value_problem(0, {"enum": [0] * MAX_CHECK_STEPS}) is None
    assert value_problem(0, {"enum": [0] * (MAX_CHECK_STEPS + 1)}) == (
        f"value is too costly to check against this schema (over {MAX_CHECK_STEPS} steps); "
        "fix: give a smaller value, or simplify the schema"
    )


def test_a_pointer_s_escapes_name_keys_with_slashes_and_tildes() -> None:
    schema = {
        "$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}},
        "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}},
    }
    assert schema_problems(schema) == []
    assert value_problem({"x": "1"}, schema) == "value.x must be integer"
    assert value_problem({"y": 1}, schema, "answer") == "answer.y must be string"


def test_a_root_draft_2020_12_schema_uri_is_accepted_and_applied() -> None:
    schema = {"$schema": DRAFT_2020_12, "uniqueItems": True}
    assert schema_problems(schema) == []
    assert value_problem([1, 1.0], schema) == "value: item 1 repeats an earlier item (uniqueItems)"


def test_a_schema_uri_below_the_root_or_another_draft_is_refused_where_it_is() -> None:
    nested = {"properties": {"a": {"$schema": DRAFT_2020_12}}}
    assert schema_problems(nested) == [
        SchemaProblem(
            ("properties", "a", "$schema"),
            f"$schema {DRAFT_2020_12!r} in a subschema is refused: pause schemas are Draft "
            f"2020-12; fix: drop it (or give {DRAFT_2020_12} at the root)",
        )
    ]
    old = "http://json-schema.org/draft-07/schema#"
    assert schema_problems({"$schema": old}) == [
        SchemaProblem(
            ("$schema",),
            f"$schema {old!r} in the root is refused: pause schemas are Draft 2020-12; fix: "
            f"drop it (or give {DRAFT_2020_12} at the root)",
        )
    ]


def test_a_schema_that_is_not_an_object_or_a_boolean_is_refused_at_the_root() -> None:
    assert schema_problems(3) == [SchemaProblem((), "a JSON Schema is an object (or true/false)")]
    assert schema_problems(False) == []


def test_an_enum_keyword_costs_its_length_and_any_other_keyword_one() -> None:
    # The metered checks are built once at import; built here again, so the rule is checked
    # on the factory itself.
    from workflows.json_schemas import _METER, _metered, _TooCostly

    def passes(*_: object) -> list[object]:
        return []

    token = _METER.set([4])
    try:
        list(_metered("enum", passes)(None, [1, 2, 3], 1, {}))
        assert _METER.get() == [1]
        list(_metered("const", passes)(None, [1, 2, 3], 1, {}))
        assert _METER.get() == [0]
        with pytest.raises(_TooCostly):
            list(_metered("enum", passes)(None, [1], 1, {}))
    finally:
        _METER.reset(token)


def test_a_nested_value_s_path_and_a_pointer_into_a_list() -> None:
    schema = {
        "prefixItems": [{"type": "integer"}],
        "properties": {"x": {"$ref": "#/prefixItems/0"}, "a": {"items": {"type": "integer"}}},
    }
    assert schema_problems(schema) == []
    assert value_problem({"x": "s"}, schema) == "value.x must be integer"
    assert value_problem({"a": [1, "s"]}, schema) == "value.a[1] must be integer"


def test_a_loop_through_dependent_schemas_is_refused() -> None:
    schema = {
        "$defs": {"a": {"dependentSchemas": {"k": {"$ref": "#/$defs/a"}}}},
        "$ref": "#/$defs/a",
    }
    (problem,) = schema_problems(schema)
    assert problem.path == ("$defs", "a", "dependentSchemas", "k", "$ref")
    assert problem.message.startswith("this $ref leads back to itself")


def test_a_long_message_is_cut_to_300_characters() -> None:
    problem = value_problem("z", {"enum": ["x" * 400]})
    assert problem is not None
    assert len(problem) == 300 and problem.endswith("...")
    assert problem == ("value must be one of " + json.dumps(["x" * 400]))[:297] + "..."
