"""Direct unit tests of the CEL parser's construction and a few refusal messages
(workflows.plan.expression_parser, through workflows.plan.expressions)."""

from __future__ import annotations

from pathlib import Path

import pytest

import workflows.plan.expression_parser as expression_parser
from workflows.plan.expression_parser import build_parser
from workflows.plan.expressions import (
    MAX_COMPREHENSION_NESTING,
    Analysis,
)
from workflows.plan.expressions import (
    analyse as cached,
)


def analyse(text: str) -> Analysis:
    # past the cache: a mutation run reuses one process, whose cache holds the unmutated verdicts
    return cached.__wrapped__(text)


ALLOWED = (
    "all, bool, contains, double, endsWith, exists, exists_one, filter, has, int, map, matches, "
    "size, startsWith, string, type, uint"
)
TEXTS = ["f()", "a.b()", "[]", "{}", "a[1] + b.c(d) ? e : f", "x.exists(y, y > 1)", '{"k": [1]}']


def test_a_fresh_parser_gives_the_modules_trees(tmp_path: Path) -> None:
    # one build (~0.2 s of grammar analysis, more under load), kept in a cache file
    kept = tmp_path / "grammar.cache"
    fresh = build_parser(kept)
    assert kept.exists()
    for text in TEXTS:
        assert fresh.parse(text) == expression_parser._PARSER.parse(text)


def test_the_parser_cache_is_a_file_beside_the_bytecode() -> None:
    cache = expression_parser._parser_cache()
    assert cache is not None
    assert cache.name == "cel-grammar.lark-cache"
    assert cache.parent == Path(expression_parser.__file__).with_name("__pycache__")
    assert cache.parent.is_dir()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'timestamp("x")',
            "timestamp() is not a plan expression function (timestamps and durations load "
            f"time-zone data the expression names); fix: use one of {ALLOWED}",
        ),
        (
            'duration("1s")',
            "duration() is not a plan expression function (timestamps and durations load "
            f"time-zone data the expression names); fix: use one of {ALLOWED}",
        ),
        (
            "x.getDate()",
            ".getDate() is not a plan expression function (timestamps and durations load "
            f"time-zone data the expression names); fix: use one of {ALLOWED}",
        ),
        ("foo(1)", f"foo() is not a plan expression function; fix: use one of {ALLOWED}"),
    ],
)
def test_unknown_functions_name_the_allowed_ones(text: str, message: str) -> None:
    assert analyse(text).problems == (("expr.function", message),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a &&", "the expression ends too early"),
        ("(a", "the expression ends too early"),
        ("a == [", "the expression ends too early"),
        ("a ) b", "unexpected ')' at column 3"),
        ("a # b", "unexpected '#' at column 3"),
    ],
)
def test_syntax_messages(text: str, message: str) -> None:
    assert analyse(text).problems == (("expr.syntax", f"{message}; fix: correct the CEL syntax"),)


def test_list_and_map_wrappers_are_not_counted_as_nodes() -> None:
    x, y, a = analyse("x").nodes, analyse("y").nodes, analyse("'a'").nodes
    assert analyse("[x]").nodes == x + 1
    assert analyse("[x, y]").nodes == x + y + 1
    assert analyse("{'a': x}").nodes == a + x + 1


def test_steps_is_read_only_with_a_literal_id() -> None:
    literal = analyse('steps["a"].b')
    assert (literal.problems, literal.steps) == ((), ("a",))
    assert analyse("steps.a").problems == (
        (
            "expr.dynamic_ref",
            'steps.a is ambiguous (step ids may hold dots); fix: write steps["a"]',
        ),
    )
    computed = (
        "expr.dynamic_ref",
        "steps[...] takes a literal step id, not a computed key or one with escapes; fix: write "
        'steps["<id>"]',
    )
    assert analyse("steps[k]").problems == (computed,)
    assert analyse("steps[k].v").problems == (computed,)
    assert analyse("steps").problems == (
        (
            "expr.dynamic_ref",
            'steps is read only as steps["<id>"] with a literal step id (so the validator can '
            'check the step runs earlier); fix: write steps["<id>"].field',
        ),
    )


def test_has_takes_one_field_selection() -> None:
    assert analyse("has(result.score)").problems == ()
    assert analyse("has(x)").problems == (
        (
            "expr.function",
            "has() takes one field selection, e.g. has(result.score); fix: write "
            "has(<value>.<field>)",
        ),
    )


def test_comprehensions_walk_their_target_and_are_bounded() -> None:
    found = analyse("items.exists(x, x > lim)")
    assert found.problems == () and found.names == frozenset({"items", "lim"})
    assert MAX_COMPREHENSION_NESTING == 2
    assert analyse("a.exists(x, b.exists(y, y > 0))").problems == ()
    assert analyse("a.exists(x, b.exists(y, c.exists(z, z > 0)))").problems == (
        (
            "expr.too_complex",
            "comprehensions are nested more than 2 deep (exists inside 2); every level "
            "multiplies the iterations; fix: flatten the expression",
        ),
    )


def test_comprehension_misuse_is_named() -> None:
    assert analyse("exists(x, x > 0)").problems == (
        (
            "expr.function",
            "exists is a macro on a list or map: fix: write <list>.exists(x, ...)",
        ),
    )
    assert analyse("x.exists(1, true)").problems == (
        (
            "expr.function",
            "exists() takes a variable name and one expression, e.g. items.exists(x, x > 0); "
            "fix: write <list>.exists(<name>, <expr>)",
        ),
    )
    assert analyse("x.all(input, true)").problems == (
        (
            "expr.function",
            "all(input, ...) would hide the binding 'input'; fix: name the variable something else",
        ),
    )
