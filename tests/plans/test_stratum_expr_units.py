"""Direct unit tests of the stratum expression translator (workflows.plan.stratum_expr): the
exact reason each untranslatable text gives, and the CEL an accepted one becomes."""

from __future__ import annotations

import pytest

from workflows.plan.stratum_expr import (
    ExprError,
    ExprSite,
    reference_steps,
    translate_expression,
    translate_template,
)

STAGE = ExprSite(item=True, prev="p")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a @ b", "unexpected character '@' at position 2"),
        ('"abc', "unterminated string at position 0"),
        ('x == "abc', "unterminated string at position 5"),
        ('"a\\qb"', "invalid escape \\q at position 2"),
        ('"a\\', "invalid escape \\ at position 2"),
        ('"a\x01"', "unescaped control character in a string at position 2"),
        ("(1", "expected ')'"),
        ("1 2", "unexpected token '2'"),
        ('1 "a"', "unexpected token ''"),
        ("!" * 70 + "x", "the expression nests deeper than 64"),
        ("result.", "member access requires a property name"),
        ("result.constructor", "member 'constructor' is forbidden"),
        ("result.a.__proto__", "member '__proto__' is forbidden"),
        ("result[-1]", "index access requires a non-negative integer literal"),
        ("result[1.5]", "index access requires a non-negative integer literal"),
        (")", "expected a literal, a name, a call or a parenthesised expression"),
        ("item", "item is bound only in a fan-out stage"),
        ("prev.output", "prev is bound only in a fan-out stage"),
        ("zz", "unknown identifier 'zz' (the reference binds result, input, item, prev)"),
        ("int(1)", "int() has no exact CEL translation (its conversions differ)"),
        ("len(1, 2)", "len expects 1 argument, received 2"),
        ("matches(1)", "matches expects 2 arguments, received 1"),
        ("nope(1)", "unknown function 'nope'"),
        ("file_exists(1)", "a file function takes a string literal or an input.<field> path"),
        ("file_exists()", "file_exists expects 1 argument(s), received 0"),
        ('file_contains("a", x)', "file_contains takes its text as a string literal"),
        ("", "an expression must be non-empty text"),
        ("x" * 2001, "the expression is over 2,000 characters"),
        ("(" * 70 + "1" + ")" * 70, "the expression nests deeper than 64"),
    ],
)
def test_untranslatable_expressions_say_why(text: str, why: str) -> None:
    with pytest.raises(ExprError) as caught:
        translate_expression(text, ExprSite())
    assert str(caught.value) == why


@pytest.mark.parametrize(
    ("text", "cel"),
    [
        ('"\\u00e9" == result.a', '"é" == result.a'),
        ("'a\\n\\t\\/' == result.b", '"a\\n\\t/" == result.b'),
        ("!result.ok || result.n >= 2", "!(result.ok) || (result.n >= 2)"),
        ("result.list[0] == 1", "result.list[0] == 1"),
        (
            'len(result.items) > 0 && matches(result.s, "^a")',
            '(size(result.items) > 0) && matches(result.s, "^a")',
        ),
        ("result.a + 1 * 2 - 3 / 4 < 5", "((result.a + (1 * 2)) - (double(3) / double(4))) < 5"),
        ("true != false", "true != false"),
        ("result.if == 1", 'result["if"] == 1'),  # a CEL reserved word as a member
        ("null == result.x", "null == result.x"),
        ("-1 < result.n", "-(1) < result.n"),
        ("result.n <= 2 && result.n > 0", "(result.n <= 2) && (result.n > 0)"),
    ],
)
def test_translations(text: str, cel: str) -> None:
    translated = translate_expression(text, ExprSite())
    assert (translated.cel, translated.files) == (cel, [])


def test_file_checks_are_split_out() -> None:
    both = translate_expression('file_exists("a.md") && result.ok', ExprSite())
    assert (both.cel, both.files) == ("result.ok", [{"file_exists": "a.md"}])
    alone = translate_expression('file_contains(input.path, "needle")', ExprSite())
    assert alone.cel is None
    assert alone.files == [{"file_contains": {"path": "${input.path}", "text": "needle"}}]


def test_what_result_binds_depends_on_the_site() -> None:
    steps = ExprSite(result="steps")
    both = translate_expression("matches(result.a.s, result.b.p)", steps)
    assert both.cel == 'matches(steps["a"].s, steps["b"].p)'
    assert translate_expression("result.a.x > 1", steps).cel == 'steps["a"].x > 1'
    with pytest.raises(ExprError, match=r"^result \(the completed steps\) is read only as"):
        translate_expression("result > 1", steps)
    with pytest.raises(ExprError, match=r"^result is not bound here$"):
        translate_expression("result.a", ExprSite(result="none"))


@pytest.mark.parametrize(
    ("text", "site", "out"),
    [
        ("${item}", STAGE, "[item]"),
        ("${input.a}", ExprSite(), "${input.a}"),
        ("${input.a.b}", ExprSite(), "${input.a.b}"),
        ("${a.output}", ExprSite(), "${steps.a.output}"),
        ("${a.output.b[0]}", ExprSite(), "${steps.a.output.b.0}"),
        ("plain text", ExprSite(), "plain text"),
    ],
)
def test_templates(text: str, site: ExprSite, out: str) -> None:
    assert translate_template(text, site) == out


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("${item}", "${item} is available only in a fan-out stage"),
        ("${nope}", "${nope} is not a reference the reference accepts"),
        ("${a.output.", "an unclosed ${"),
        ("$${a.output}", "a `$` directly before ${...} has no translation"),
        ("${a.output..b}", "${a.output..b} has a malformed path"),
    ],
)
def test_template_refusals(text: str, why: str) -> None:
    with pytest.raises(ExprError) as caught:
        translate_template(text, ExprSite())
    assert str(caught.value) == why


def test_reference_steps_in_first_use_order() -> None:
    assert reference_steps("${b.output.x} ${input.q} ${a.output} ${b.output}") == ["b", "a"]
