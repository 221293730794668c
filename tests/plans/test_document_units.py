"""Direct unit tests of plan text parsing (workflows.plan.document): exact messages and paths of
each refusal, alias bombs and self-references, YAML 1.2 booleans."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import yaml

from workflows.plan.document import MAX_NODES, _clean, parse_text
from workflows.plan.errors import PlanError


def problems(text: str, filename: str | None = None) -> list[tuple[str, str, str]]:
    value, errors = parse_text(text, filename=filename)
    if errors:
        assert value is None or isinstance(value, dict | list)
    return [(e.code, e.path, e.message) for e in errors]


def test_plain_documents_parse() -> None:
    assert parse_text('{"a": [1, 2.5, true, null]}') == ({"a": [1, 2.5, True, None]}, [])
    assert parse_text("a: [1, 2.5]\non: yes\n") == ({"a": [1, 2.5], "on": "yes"}, [])
    assert parse_text("a: True") == ({"a": True}, [])
    # a name decides the form over the text's first character
    assert parse_text("[1]", filename="p.yaml") == ([1], [])
    assert parse_text("a: 1", filename="P.JSON")[1][0].message.startswith("not valid JSON: ")


def test_duplicate_and_non_string_keys() -> None:
    assert problems('{"a": {"k": 1, "k": 2}}') == [
        (
            "document.duplicate_key",
            "a",
            "key 'k' in a is repeated or not a string; fix: give each key once, as a string",
        )
    ]
    assert problems('{"k": 1, "k": 2}') == [
        (
            "document.duplicate_key",
            "",
            "key 'k' in (document) is repeated or not a string; fix: give each key once, as a "
            "string",
        )
    ]
    assert problems("a:\n  [1]: x\n") == [
        (
            "value.not_json",
            "a",
            "key '[1]' in a is repeated or not a string; fix: give each key once, as a string",
        )
    ]
    assert problems("a:\n  1: x\n") == [
        ("value.not_json", "a", "key 1 is a int; fix: quote it"),
    ]
    value, _ = parse_text("a:\n  1: x\n")
    assert value == {"a": {"1": "x"}}


def test_non_finite_numbers() -> None:
    assert problems('{"a": [1, NaN]}') == [
        ("value.not_finite", "a[1]", "NaN is not a finite number; fix: use a finite one")
    ]
    assert problems('{"a": -Infinity}') == [
        ("value.not_finite", "a", "-Infinity is not a finite number; fix: use a finite one")
    ]
    assert problems('{"a": 1e999}') == [
        ("value.not_finite", "a", "inf is not a finite number; fix: use a finite one")
    ]
    assert problems("a: .nan") == [
        ("value.not_finite", "a", "nan is not a finite number; fix: use a finite one")
    ]


def test_values_json_cannot_hold() -> None:
    assert problems("a: 2024-01-02") == [
        ("value.not_json", "a", "date values are not JSON; fix: quote it as a string")
    ]
    # an alias used twice side by side is not a self-reference
    assert parse_text("a: &x [1]\nb: [*x, *x]\n") == ({"a": [1], "b": [[1], [1]]}, [])


def test_an_alias_bomb_is_refused_once() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 7):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        levels.append(f"a{i}: &a{i} [{refs}]")
    value, errors = parse_text("\n".join(levels) + "\n")
    assert value is not None
    assert [(e.code, e.message) for e in errors] == [
        (
            "document.too_large",
            f"the document has over {MAX_NODES} values (YAML aliases expand); fix: write a "
            "smaller plan without anchors",
        )
    ]
    assert errors[0].path.startswith("a")  # where the count ran out


def test_syntax_errors_name_the_form_on_one_line() -> None:
    (problem,) = problems("a: [1\nb: 2")
    assert problem[0:2] == ("document.syntax", "")
    assert problem[2].startswith("not valid YAML: ") and "\n" not in problem[2]
    assert problem[2].endswith("; fix: correct the syntax")
    (problem,) = problems('{"a": }')
    assert problem[2].startswith("not valid JSON: Expecting value: line 1 column 7")


def test_too_many_characters() -> None:
    text: Any = " " * (8 * 1024 * 1024 + 1)
    assert problems(text) == [
        (
            "document.too_large",
            "",
            "8388609 characters is over the 8388608 limit; fix: split the plan",
        )
    ]


def test_a_value_that_holds_itself_is_refused() -> None:
    # PyYAML refuses a recursive node itself; the walk still guards against one
    value: list[Any] = [1]
    value.append(value)
    errors: list[PlanError] = []
    assert _clean(value, (), errors, [100], set()) == [1, None]
    assert [(e.code, e.path, e.message) for e in errors] == [
        ("value.not_json", "[1]", "a YAML alias refers to itself; fix: remove it")
    ]
    # the same list twice side by side is no self-reference
    shared = [1]
    assert _clean([shared, shared], (), errors := [], [100], set()) == [[1], [1]]
    assert errors == []


def test_a_yaml_error_is_told_on_one_line() -> None:
    text = "a: [1\nb: 2"
    with pytest.raises(yaml.YAMLError) as caught:
        yaml.safe_load(text)
    detail = str(caught.value).replace("\n", " ")
    assert problems(text) == [
        ("document.syntax", "", f"not valid YAML: {detail}; fix: correct the syntax")
    ]


def test_json_nested_past_what_the_walk_takes_is_refused() -> None:
    # json's parser counts one level a nesting, the walk two: past half the recursion limit
    # the text parses and the walk (needed for the repeated key) runs out of stack
    depth = int(sys.getrecursionlimit() * 0.6)
    text = "[" * depth + '{"a": 1, "a": 2}' + "]" * depth
    assert parse_text(text, filename="p.json") == (
        None,
        [PlanError("document.too_large", "", "the document nests too deeply")],
    )
