"""Expression text never meets a backtracking lexer: the rewritten string terminals lex like
cel-python's on every literal they accept, and thousands of random and adversarial texts each
analyse in bounded time (the slowest is printed; a freeze took minutes before)."""

from __future__ import annotations

import functools
import random
import re
import time

import pytest
from lark import Lark
from lark.exceptions import LarkError

from workflows.plan.expression_lexing import lexical_problem, linear_grammar
from workflows.plan.expression_parser import _grammar, build_parser
from workflows.plan.expressions import MAX_CHARS, MAX_DEPTH, analyse


def _original_grammar() -> str:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("celpy")
    assert spec is not None and spec.submodule_search_locations
    return (Path(next(iter(spec.submodule_search_locations))) / "cel.lark").read_text()


@functools.cache
def _parsers() -> tuple[Lark, Lark]:
    """The rewritten parser and cel-python's own. Built on first use, not at import: every xdist
    worker collects this module, and the two grammars cost about a second of CPU to analyse."""
    original = Lark(
        _original_grammar(),
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        maybe_placeholders=False,
        priority="invert",
    )
    return build_parser(None), original


def test_the_grammar_differs_only_in_its_string_terminals() -> None:
    original, linear = _original_grammar().splitlines(), _grammar().splitlines()
    changed = [(a, b) for a, b in zip(original, linear, strict=True) if a != b]
    assert [a.split(":")[0].split()[0] for a, _ in changed] == [
        "STRING_LIT", "|", "MLSTRING_LIT", "|",
    ]  # fmt: skip
    with pytest.raises(RuntimeError, match="STRING_LIT"):
        linear_grammar(_original_grammar().replace("{4-8}", "{4,8}"))


_OPENERS = ['"', "'", '"""', "'''", 'r"', "b'", 'br"""', "R'"]


def test_every_literal_the_rewrite_accepts_lexes_as_cel_python_lexes_it() -> None:
    # Small bodies, so that the original's backtracking stays cheap where it fails.
    linear, original = _parsers()
    rng = random.Random(7)
    alphabet = "ab\"'\\nxu07f{-}8 \n"
    accepted = 0
    for _ in range(3_000):
        opener = rng.choice(_OPENERS)
        quote = opener.lstrip("rRbB")
        body = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        text = f"{opener}{body}{quote}{rng.choice(['', ' + x', quote])}"
        try:
            tree = linear.parse(text)
        except LarkError:
            continue  # stricter only where cel-python's first path never closes the literal
        assert tree == original.parse(text), text
        accepted += 1
    assert accepted > 1_000


@pytest.mark.parametrize(
    "text",
    [
        '"' + "\\a" * 32,
        "'" + "\\a" * 32,
        'r"' + "\\a" * 32,
        'b"' + "\\a" * 32,
        '"""' + "\\a" * 32,
        "'''" + "\\n" * 40 + "''",
        'x == "abc\\"',  # the escaped quote does not close it
        '"a\nb"',  # a one-line literal does not cross a line break
        'input.s.matches("' + "\\d" * 400,
    ],
)
def test_an_unclosed_literal_is_refused_before_parsing(text: str) -> None:
    # This thread's CPU time, which other processes' load does not inflate: 32 escapes took
    # minutes of it before.
    began = time.thread_time()
    analysis = analyse(text)
    assert time.thread_time() - began < 0.5
    assert analysis.problems[0][0] == "expr.syntax"
    assert "is not closed" in analysis.problems[0][1]


def test_closed_literals_with_escapes_still_parse() -> None:
    for text in ['"a\\"b" == x', "'\\'' + 'q'", '"""a\n"b""c""" != ""', r"'\x41\u00e9\101' != ''"]:
        assert analyse(text).ok, (text, analyse(text).problems)


def test_nesting_and_unary_runs_are_refused_before_parsing() -> None:
    assert lexical_problem("(" * MAX_DEPTH + ")" * MAX_DEPTH, MAX_DEPTH) is None
    deep = lexical_problem("[" * (MAX_DEPTH + 1), MAX_DEPTH)
    assert deep is not None and deep[0] == "expr.too_complex" and "nest" in deep[1]
    # brackets inside a literal or a comment are not brackets
    assert lexical_problem('"' + "(" * 100 + '" // ' + "[" * 100, MAX_DEPTH) is None
    unary = lexical_problem("-" * (MAX_DEPTH + 1) + "1", MAX_DEPTH)
    assert unary is not None and "unary" in unary[1]
    assert lexical_problem("a != b && !c && 1 - -2 > 0", MAX_DEPTH) is None


_TOKENS = [
    '"', "'", '"""', "'''", "\\a", "\\", "\\x4", "\\u12", 'r"', "b'", "(", ")", "[", "]",
    "{", "}", "-", "!", "+", "*", "1", "1.5e-3", "0x1F", "7u", "x", ".y", ",", ":", "?",
    "//", "\n", "==", "&&", "||", " ", "in", "true", "null", "size(", ".all(v,", "steps[",
]  # fmt: skip


def _adversarial() -> list[str]:
    texts = []
    for opener in _OPENERS:
        for escapes in (24, 64, 400, 990):
            texts.append(opener + "\\a" * escapes)
            texts.append("x + " + opener + "\\'" * escapes + opener)
    texts += ["(" * 999 + "1" + ")" * 999, "-" * 1999 + "1", "1" + "+1" * 999]
    texts += ["a" + ".b" * 999, "[" + "1," * 998 + "1]", "{" + "1:1," * 499 + "}"]
    return [t[:MAX_CHARS] for t in texts]


def test_random_and_adversarial_texts_each_analyse_in_bounded_time() -> None:
    rng = random.Random(20261206)
    texts = _adversarial()
    while len(texts) < 3_000:
        count = rng.choice([5, 40, 300, 900])
        texts.append("".join(rng.choice(_TOKENS) for _ in range(count))[:MAX_CHARS])
    slowest, slowest_text = 0.0, ""
    for text in texts:
        analyse.cache_clear()
        began = time.thread_time()  # CPU time of the analysis itself, not of the machine
        analyse(text)
        elapsed = time.thread_time() - began
        if elapsed > slowest:
            slowest, slowest_text = elapsed, text
    print(f"slowest of {len(texts)} analyses: {slowest * 1000:.1f} ms ({slowest_text[:40]!r})")
    # Performance is measured in benchmarks; this bound only catches a blow-up, which took
    # minutes on one text before.
    assert slowest < 1.0, (slowest, slowest_text[:80])
