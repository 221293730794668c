"""Direct tests of input decoding's error text and range backstop, and of input patterns."""

from __future__ import annotations

import pytest
from pydantic import Json, ValidationError

from workflows.bounds import MAX_INT, MIN_INT
from workflows.inputs import StrictModel, describe_errors, out_of_range_integer
from workflows.patterns import PatternInvalid, compile_pattern, pattern_problem, search


class Shaped(StrictModel):
    name: str
    payload: Json[int] | None = None


def errors_of(value: object) -> str:
    with pytest.raises(ValidationError) as caught:
        Shaped.model_validate(value)
    return describe_errors(caught.value)


def test_a_value_is_shown_cut_to_sixty_characters() -> None:
    long = ["x" * 100]
    shown = repr(long)[:57] + "..."
    assert errors_of({"name": long}) == f"name: Input should be a valid string (got {shown})"
    exact = ["y" * 56]  # its repr is 60 characters: shown whole
    assert len(repr(exact)) == 60
    assert errors_of({"name": exact}) == f"name: Input should be a valid string (got {exact!r})"


def test_a_missing_field_and_invalid_json_show_no_value() -> None:
    assert errors_of({}) == "name: Field required"
    assert (
        errors_of({"name": "a", "payload": "{nope"})
        == "payload: Invalid JSON: key must be a string at line 1 column 2"
    )


def test_an_integer_at_either_end_of_64_bits_is_in_range() -> None:
    assert out_of_range_integer({"a": [MIN_INT, MAX_INT]}) is None
    assert out_of_range_integer({"a": [MIN_INT - 1]}) == ("a.0", MIN_INT - 1)
    assert out_of_range_integer({"a": [0, MAX_INT + 1]}) == ("a.1", MAX_INT + 1)


def test_a_pattern_that_does_not_compile_is_reported_not_logged(
    capfd: pytest.CaptureFixture[str],
) -> None:
    problem = pattern_problem("(a")
    assert problem == (
        "the pattern does not compile with RE2 (missing ): (a); fix: correct it (RE2 is "
        "linear-time: no backreferences, no lookahead or lookbehind)"
    )
    assert capfd.readouterr().err == ""  # a refusal goes to the caller, not to stderr
    with pytest.raises(PatternInvalid):
        compile_pattern("(a")


def test_a_pattern_over_the_limit_is_refused_and_one_at_it_compiles() -> None:
    assert pattern_problem("a" * 1000) is None
    assert pattern_problem("a" * 1001) == (
        "the pattern is 1001 characters, over the 1000 limit; fix: write a shorter pattern"
    )
    assert search("b+", "abbc") is True
    assert search("^b", "abbc") is False
