"""Judge output parsing: trimmed text, first fenced block, first '{' to last '}'."""

from __future__ import annotations

import pytest

from workflows.tournament.judge_parse import (
    JudgeParseError,
    JudgeVerdict,
    Outcome,
    parse_judge_output,
)

PLAIN = '{"feedback_a": "fa", "feedback_b": "fb", "winner": "A", "confidence": 0.8}'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PLAIN, JudgeVerdict("A", "fa", "fb", 0.8)),
        (f"\n\n  {PLAIN}  \n", JudgeVerdict("A", "fa", "fb", 0.8)),
        (
            f"Here is my verdict:\n```json\n{PLAIN}\n```\nThanks.",
            JudgeVerdict("A", "fa", "fb", 0.8),
        ),
        (f"```\n{PLAIN}\n```", JudgeVerdict("A", "fa", "fb", 0.8)),
        (f"I compared them. {PLAIN} That is all.", JudgeVerdict("A", "fa", "fb", 0.8)),
        ('{"feedback_a": "x", "feedback_b": "y", "winner": "tie"}', JudgeVerdict("tie", "x", "y")),
        (
            '{"critique_for_A": "ca", "critique_for_B": "cb", "winner": "B"}',
            JudgeVerdict("B", "ca", "cb"),
        ),
        # The canonical name wins over its alias.
        ('{"feedback_a": "f", "critique_for_A": "c", "winner": "B"}', JudgeVerdict("B", "f", "")),
        ('{"winner": " b "}', JudgeVerdict("B", "", "")),
        ('{"winner": "TIE", "confidence": 0}', JudgeVerdict("tie", "", "", 0.0)),
        ('{"winner": "A", "confidence": 1}', JudgeVerdict("A", "", "", 1.0)),
        ('{"winner": "A", "confidence": null, "feedback_a": null}', JudgeVerdict("A", "", "")),
        (
            '{"winner": "A", "selection_reason": "extra keys are ignored"}',
            JudgeVerdict("A", "", ""),
        ),
        # Braces inside strings are fine; the object is parsed, not pattern-matched.
        (
            '{"feedback_a": "use {x}", "feedback_b": "}", "winner": "A"}',
            JudgeVerdict("A", "use {x}", "}"),
        ),
    ],
)
def test_valid_outputs(text: str, expected: JudgeVerdict) -> None:
    assert parse_judge_output(text) == expected


@pytest.mark.parametrize(
    ("text", "reason", "fragment"),
    [
        ("", "empty", "empty"),
        ("   \n ", "empty", "empty"),
        ("A is better.", "no_json_object", "no JSON object"),
        ('["A"]', "no_json_object", "no JSON object"),
        ('"A"', "no_json_object", "no JSON object"),
        ('{"winner": "A",}', "no_json_object", "no JSON object"),
        ('{"feedback_a": "x"}', "winner_invalid", "winner must be"),
        ('{"winner": "C"}', "winner_invalid", "'C'"),
        ('{"winner": 1}', "winner_invalid", "winner must be"),
        ('{"winner": "A", "confidence": 1.5}', "confidence_invalid", "[0, 1]"),
        ('{"winner": "A", "confidence": -0.1}', "confidence_invalid", "[0, 1]"),
        ('{"winner": "A", "confidence": "high"}', "confidence_invalid", "'high'"),
        ('{"winner": "A", "confidence": true}', "confidence_invalid", "True"),
        ('{"winner": "A", "confidence": NaN}', "confidence_invalid", "[0, 1]"),
        ('{"winner": "A", "feedback_b": ["x"]}', "feedback_invalid", "feedback_b must be a string"),
    ],
)
def test_invalid_outputs(text: str, reason: str, fragment: str) -> None:
    with pytest.raises(JudgeParseError) as info:
        parse_judge_output(text)
    assert info.value.reason == reason
    assert fragment in str(info.value)


def test_the_first_object_found_is_the_one_validated() -> None:
    # The fenced block is an object, so the later slice is never consulted.
    text = '```json\n{"winner": "maybe"}\n```\n{"winner": "A"}'
    with pytest.raises(JudgeParseError, match="winner"):
        parse_judge_output(text)
    # A fenced block that is not JSON falls through to the brace slice.
    assert parse_judge_output('```\nnot json\n```\n{"winner": "B"}').winner == "B"


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(JudgeParseError, ValueError)


def test_outcome_values() -> None:
    assert [Outcome("a", "b", w).y for w in ("A", "B", "tie")] == [1.0, 0.0, 0.5]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "judge output is empty: expected a JSON object"),
        (
            "no verdict",
            "judge output holds no JSON object (tried the whole text, the first fenced block and "
            "the first '{' to the last '}')",
        ),
        ('{"winner": "C"}', 'judge field winner must be "A", "B" or "tie" (got \'C\')'),
        ('{"winner": "A", "feedback_a": 3}', "judge field feedback_a must be a string (got int)"),
        (
            '{"winner": "A", "critique_for_B": [1]}',
            "judge field feedback_b must be a string (got list)",
        ),
        (
            '{"winner": "A", "confidence": "x"}',
            "judge field confidence must be a number in [0, 1] (got 'x')",
        ),
        ('{"winner": "A", "confidence": 2}', "judge field confidence must be in [0, 1] (got 2)"),
        (
            '{"winner": "A", "confidence": Infinity}',
            "judge field confidence must be in [0, 1] (got inf)",
        ),
    ],
)
def test_each_refusal_s_whole_message(text: str, message: str) -> None:
    with pytest.raises(JudgeParseError) as info:
        parse_judge_output(text)
    assert str(info.value) == message


def test_an_answer_over_the_limit_is_not_searched() -> None:
    from workflows.bounds import MAX_JSON_CHARS

    padded = '{"winner": "A"}'.ljust(MAX_JSON_CHARS)
    assert parse_judge_output(padded).winner == "A"
    with pytest.raises(JudgeParseError) as info:
        parse_judge_output(padded + " ")
    assert info.value.reason == "too_long"
    assert str(info.value) == (
        f"judge output is {MAX_JSON_CHARS + 1} characters, over the {MAX_JSON_CHARS} a verdict "
        "may take: expected one short JSON object"
    )


def test_a_fence_with_a_language_tag_and_no_newline_and_a_brace_slice() -> None:
    assert parse_judge_output('``` {"winner": "B"}```').winner == "B"
    assert parse_judge_output('x ```json{"winner": "tie"}``` y').winner == "tie"
    # the slice runs from the first '{' to the last '}' and needs one after the other
    assert parse_judge_output('say {"winner": "A"} done').winner == "A"
    with pytest.raises(JudgeParseError) as info:
        parse_judge_output("} then {")
    assert info.value.reason == "no_json_object"


def test_a_stripped_fenced_block_and_an_alias_that_is_null() -> None:
    assert parse_judge_output('```\n  {"winner": "a"}  \n```') == JudgeVerdict("A", "", "")
    verdict = parse_judge_output('{"winner": "A", "feedback_b": null, "critique_for_B": "cb"}')
    assert verdict.feedback_b == "cb"
