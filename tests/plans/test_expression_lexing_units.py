"""Direct unit tests of the lexical pre-checks of CEL text (workflows.plan.expression_lexing)."""

from __future__ import annotations

import pytest

from workflows.plan.expression_lexing import _literal_end, lexical_problem, linear_grammar


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ('"abc" + x', 0, 5),
        ("x == 'a'", 5, 8),
        ('"a\\"b"', 0, 6),  # an escaped quote does not close it
        ('"a\\\\"', 0, 5),  # an escaped backslash does not escape the quote
        ('"a\nb"', 0, -1),  # a one-line literal stops at a line break
        ('"""a\n"b"""', 0, 10),  # a triple-quoted one does not, nor at a lone quote
        ("'''ab''", 0, -1),
        ('"abc', 0, -1),
        ('"ab\\', 0, -1),
    ],
)
def test_literal_end(text: str, start: int, end: int) -> None:
    assert _literal_end(text, start) == end


def test_lexical_problems() -> None:
    assert lexical_problem('x == "a\\"b" && y', 8) is None
    assert lexical_problem('x == "abc', 8) == (
        "expr.syntax",
        "the string literal at column 6 is not closed; fix: end it with its opening quote (a "
        "backslash escapes the character after it)",
    )
    assert lexical_problem("// just a comment (((", 1) is None
    assert lexical_problem("!!!x", 2) == (
        "expr.too_complex",
        "3 unary operators in a row at column 3, over 2; fix: simplify it",
    )
    assert lexical_problem("x != !y", 1) is None
    assert lexical_problem("a --!= b", 2) is None  # the ! of != is no unary operator
    assert lexical_problem("((x))", 1) == (
        "expr.too_complex",
        "brackets nest more than 1 deep at column 2; fix: flatten it, or compute parts in a set "
        "step",
    )
    assert lexical_problem("(x)(y)[z]", 1) is None
    # a closing bracket takes one level off, so a deep group after a shallow one still counts
    assert lexical_problem("((x)((y)))", 2) == (
        "expr.too_complex",
        "brackets nest more than 2 deep at column 6; fix: flatten it, or compute parts in a set "
        "step",
    )


def test_an_unexpected_grammar_is_refused_loudly() -> None:
    with pytest.raises(RuntimeError) as caught:
        linear_grammar("start: expr\n")
    assert str(caught.value) == (
        "cel-python's STRING_LIT terminal is not the one ponder rewrites; check the rewrite in "
        "workflows/plan/expression_lexing.py against the new grammar"
    )
