"""Regexes and JSON Schemas from input: RE2 with a bounded program, schemas
checked as schemas with bounded size, values checked in linear time with a step meter.

Pure code, so these run in microseconds; the end-to-end runs through the real ``temporal``
binary are in ``tests/hostile/test_regex.py``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from workflows.json_schemas import (
    MAX_CHECK_STEPS,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    MAX_VALUE_BYTES,
    schema_problems,
    value_problem,
)
from workflows.patterns import MAX_PATTERN_CHARS, pattern_problem, search
from workflows.plan.control import parse_resume_value

# -- patterns ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(", "missing )"),
        (r"(a)\1", "invalid escape sequence"),
        ("a(?=b)", "invalid perl operator"),
        ("(?<!a)b", "invalid perl operator"),
        (r"(\pL{100}){10}", "pattern too large"),  # over RE2's max_mem: a bounded program
        ("a" * (MAX_PATTERN_CHARS + 1), f"over the {MAX_PATTERN_CHARS} limit"),
    ],
)
def test_patterns_re2_refuses(pattern: str, why: str) -> None:
    problem = pattern_problem(pattern)
    assert problem is not None and why in problem and "fix:" in problem


def test_catastrophic_patterns_match_in_linear_time() -> None:
    # This thread's CPU time, here and below: what the input costs, which a loaded machine
    # (2 cores, -n 6, load 10-16) does not change, where wall time grew several-fold.
    began = time.thread_time()
    assert not search("^(a|a)*$", "a" * 26 + "!")  # ~40 s on Python's re
    assert not search("(?:.|.)*!NOPE", "x" * 200_000)
    assert search("^(a|a)*$", "a" * 200_000)
    assert time.thread_time() - began < 1


# -- schemas -------------------------------------------------------------------------------


def paths(schema: object) -> list[tuple[str | int, ...]]:
    return [p.path for p in schema_problems(schema)]


@pytest.mark.parametrize(
    ("schema", "path", "why"),
    [
        ({"type": "string", "pattern": "("}, ("pattern",), "missing )"),
        ({"patternProperties": {r"(a)\1": {}}}, ("patternProperties", r"(a)\1"), "RE2"),
        ({"properties": {"v": {"pattern": "(?=x)"}}}, ("properties", "v", "pattern"), "RE2"),
        ({"type": "strng"}, ("type",), "not one of"),
        ({"properties": {"a": 1}}, ("properties", "a"), "is not of type"),
        ({"$ref": "https://example.com/s.json"}, ("$ref",), "nothing is fetched"),
        ({"$ref": "#/$defs/missing"}, ("$ref",), "points at nothing"),
        ({"$ref": "#"}, ("$ref",), "leads back to itself"),
        (
            {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
            ("$defs", "a", "anyOf", 0, "$ref"),
            "leads back to itself",
        ),
        ({"$id": "https://example.com/"}, ("$id",), "base URI"),
        ({"$dynamicRef": "#meta"}, ("$dynamicRef",), "not supported"),
        ({"unevaluatedProperties": False}, ("unevaluatedProperties",), "additionalProperties"),
        (
            {"items": {"$schema": "http://json-schema.org/draft-07/schema#"}},
            ("items", "$schema"),
            "Draft 2020-12",
        ),
        ({"$schema": "http://json-schema.org/draft-07/schema#"}, ("$schema",), "Draft 2020-12"),
        ({"x-extra": {"pattern": "("}, "$ref": "#/x-extra"}, ("x-extra", "pattern"), "RE2"),
    ],
)
def test_schema_refusals_name_the_path(schema: object, path: tuple[Any, ...], why: str) -> None:
    problems = schema_problems(schema)
    assert path in [p.path for p in problems], problems
    assert any(why in p.message for p in problems if p.path == path), problems


def test_schema_size_bounds() -> None:
    wide = {"enum": ["x" * 100] * (MAX_SCHEMA_BYTES // 100)}
    assert "bytes of JSON" in schema_problems(wide)[0].message
    many = {"enum": list(range(MAX_SCHEMA_NODES))}
    assert "values" in schema_problems(many)[0].message
    deep: dict[str, Any] = {}
    for _ in range(MAX_SCHEMA_DEPTH):
        deep = {"items": deep}
    assert "levels deep" in schema_problems({"items": deep})[0].message


def test_usable_schemas_pass() -> None:
    tree = {
        "$defs": {"node": {"type": "object", "properties": {"kids": {"items": {"$ref": "#"}}}}},
        "$ref": "#/$defs/node",
    }
    for schema in (
        {"type": "string", "pattern": "^v[0-9]+[.][0-9]+[.][0-9]+$"},
        {"type": "string", "pattern": "^(a|a)*$"},  # fine on RE2
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
        {"properties": {"$ref": {"type": "string"}}},  # a property named $ref is a name
        tree,
    ):
        assert schema_problems(schema) == [], schema


# -- values --------------------------------------------------------------------------------


def test_value_checks_run_on_re2_and_name_the_value_path() -> None:
    redos = {"type": "string", "pattern": "^(a|a)*$"}
    assert value_problem("a" * 26 + "!", redos, "v") == "v must match ^(a|a)*$"
    assert value_problem("a" * 26, redos, "v") is None
    size = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    assert value_problem({"n": "four"}, size, "size") == "size.n must be integer"
    assert value_problem({}, size, "size") == "size.n is required"
    keyed = {"patternProperties": {"^x": {"pattern": "^(a|a)*$"}}, "additionalProperties": False}
    assert value_problem({"xa": "a" * 30 + "!"}, keyed, "v") == "v.xa must match ^(a|a)*$"
    assert "additional properties" in (value_problem({"y": 1}, keyed, "v") or "")
    assert "does not compile" in (value_problem("(", {"format": "regex"}, "v") or "")
    unique = {"uniqueItems": True}
    assert "repeats" in (value_problem([{"a": 1}, {"a": 1.0}], unique, "v") or "")
    assert value_problem([1, True, "1", [1], {"a": 1}], unique, "v") is None


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"items": {"anyOf": [{"const": i} for i in range(400)]}}, [-1] * 5000),
        ({"anyOf": [False] * 900}, list(range(10_000))),
        ({"items": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}, ["x"] * 12_000),
        (
            {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}] * 12}, "b": {"anyOf": [{}] * 12}}},
            [],
        ),
    ],
)
def test_a_costly_check_stops_at_the_meter(schema: dict[str, Any], value: object) -> None:
    assert schema_problems(schema) == []
    began = time.thread_time()
    problem = value_problem(value, schema, "v")
    assert time.thread_time() - began < 2  # ~70 ms quiet: the meter, not the input, sets it
    if problem is not None:
        assert f"over {MAX_CHECK_STEPS} steps" in problem


def test_value_size_bounds() -> None:
    big = "x" * MAX_VALUE_BYTES
    assert "over the" in (value_problem(big, {}, "v") or "")
    value, problem = parse_resume_value(f'"{big}"', typed=True)
    assert value is None and problem is not None and f"{MAX_VALUE_BYTES} limit" in problem
    assert parse_resume_value('{"n": 4}', typed=True) == ({"n": 4}, None)


# -- fixed patterns over model output (workflow code) -----------------------------------------


def test_fence_scans_over_model_output_are_linear() -> None:
    """A judge reply or step output is text from outside too: the fence scans were quadratic on
    Python's re (an unclosed fence and 32,000 characters: 7 s and 2 s, in workflow code)."""
    from workflows.plan.refs import extract_json
    from workflows.tournament.judge_parse import JudgeParseError, parse_judge_output

    began = time.thread_time()
    with pytest.raises(JudgeParseError):
        parse_judge_output("```" + "x" * 131_072)
    with pytest.raises(ValueError):
        extract_json("```\n" + " " * 1_000_000 + "x")
    assert time.thread_time() - began < 1
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json("  ```\n[1]\n```  \n") == [1]


# -- anchored names ---------------------------------------------------------------------


def test_names_validated_by_pythons_re_refuse_a_final_newline() -> None:
    """``$`` matches before a final newline; every validating pattern is a full match."""
    from client.profiles import PROFILE_NAME
    from workflows.plan.contracts import parse_type
    from workflows.plan.joins import parse_join
    from workflows.plan.refs import RefError, parse_template
    from workflows.run_ids import run_id_problem
    from workflows.tournament.types import GivenCandidate

    assert run_id_problem("abc\n") is not None and run_id_problem("abc") is None
    assert PROFILE_NAME.fullmatch("p\n") is None
    with pytest.raises(ValueError):
        GivenCandidate(id="a\n", text="t")
    with pytest.raises(ValueError):
        parse_type("string\n", {})
    for text in ("${input.k\n}", "${steps.a\n.output}", "${steps.a.output.x\n}"):
        with pytest.raises(RefError):
            parse_template(text)
    with pytest.raises(ValueError):
        parse_join("quorum:2\n")


def test_the_flattened_meta_schema_finds_what_the_stock_one_finds() -> None:
    """The meta-schema check resolves 2020-12's dynamic references to itself (12x faster);
    for plain schemas it reports the same paths as the library's own meta-schema."""
    from jsonschema import Draft202012Validator

    from workflows.json_schemas import load

    checkers = load()
    stock = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=checkers.formats)
    for schema in (
        {"type": "strng"},
        {"properties": {"a": 1, "b": {"items": {"minLength": -1}}}},
        {"anyOf": [{"required": [1]}, {"enum": 3}], "not": {"pattern": "("}},
        {"$defs": {"x": {"patternProperties": {"(": True}}}, "prefixItems": [{"const": 1}, 2]},
        {"dependentSchemas": {"a": {"if": {"maxItems": "3"}}}, "contentMediaType": 1},
        {"type": "object", "properties": {"ok": {"type": "string", "pattern": "^a+$"}}},
    ):
        flat = sorted({tuple(map(str, e.absolute_path)) for e in checkers.meta.iter_errors(schema)})
        full = sorted({tuple(map(str, e.absolute_path)) for e in stock.iter_errors(schema)})
        assert flat == full, schema


def test_a_plans_schemas_together_are_bounded_and_quick_to_check() -> None:
    """Each pause schema is checked again in the workflow's input decoding: the plan-wide
    ceiling keeps that inside a workflow task (2,000 empty subschemas took 1.6 s before)."""
    from workflows.json_schemas import MAX_DOCUMENT_SCHEMAS_NODES
    from workflows.plan.validate import validate_document

    def plan(count: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"anyOf": [{}] * (MAX_SCHEMA_NODES - 3)}
        steps = [
            {"id": f"s{i}", "kind": "pause",
             "pause": {"state": "S", "resume_arg": f"a{i}", "schema": schema}}
            for i in range(count)
        ]  # fmt: skip
        return {"schema": "ponder-plan/1", "name": "p", "steps": steps}

    fits = MAX_DOCUMENT_SCHEMAS_NODES // MAX_SCHEMA_NODES
    began = time.thread_time()
    assert validate_document(plan(fits)).errors == []
    assert time.thread_time() - began < 2  # ~0.2 s quiet
    over = validate_document(plan(fits + 1)).errors
    assert [(e.code, e.path) for e in over] == [("pause.schema", f"steps[{fits}].pause.schema")]
