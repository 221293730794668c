"""CEL expressions in plans (docs/plans.md, "Expressions, ensure, iterate and set"): the grammar
check, bounds and names.

Pure (the parser is lark, with cel-python's own grammar file; nothing of cel-python's evaluator
is imported, so this also runs in the workflow's input decoding). ``set`` values, ``ensure[].expr``
and ``iterate.until`` are CEL: non-Turing-complete, side-effect free, and able to name only what
ponder binds. This module decides, from the text alone, whether an expression may run:

- ``expr.syntax``: it does not parse (LALR, linear in the text: string literals lex with
  ``expression_lexing``'s rewritten terminals, and an unclosed one is refused before parsing);
- ``expr.too_complex``: over 2,000 characters, 400 AST nodes, depth 32, or comprehensions
  nested deeper than 2;
- ``expr.function``: a function, method or macro outside the list below (timestamps and
  durations load time-zone files the expression names, so they are not on it), a macro with
  the wrong arguments, or a message construction ``T{...}``;
- ``expr.dynamic_ref``: ``steps`` used other than as ``steps["<literal id>"]``;
- ``expr.unknown_name`` (checked by the caller against the names its site binds): a free name
  that is not bound there.

``analyse(text)`` is cached by text (parsing costs ~0.6 ms), so a plan that repeats one
expression pays once, and so does every later validation of the same plan in this process. The
parser (``workflows.plan.expression_parser``: lark and its grammar tables) is loaded by the first
expression analysed (:func:`load`), so a plan without expressions never loads it; a worker loads
it at start, so no workflow task (nor a replay, in Temporal's sandbox) does. Evaluation is
elsewhere: the worker's ``evaluate_cel`` activity (``activities.plan.cel``), which runs this
check again before it evaluates anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache

from workflows.plan.expression_lexing import lexical_problem

__all__ = [
    "BINDINGS",
    "COMPREHENSIONS",
    "FUNCTIONS",
    "MAX_CHARS",
    "MAX_COMPREHENSION_NESTING",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_PLAN_EXPRESSIONS",
    "MAX_PLAN_EXPRESSION_CHARS",
    "TYPE_NAMES",
    "Analysis",
    "analyse",
    "load",
    "unknown_names",
]

MAX_CHARS = 2_000
MAX_NODES = 400
MAX_DEPTH = 32
MAX_COMPREHENSION_NESTING = 2
MAX_PLAN_EXPRESSIONS = 1_000
"""Distinct expression texts in one plan: validation parses each once (~0.6 ms), and it runs in
the workflow's first task too, which must stay well inside Temporal's 2 s deadlock window."""
MAX_PLAN_EXPRESSION_CHARS = 16_000
"""Characters of distinct expression text in one plan. Parsing is linear, 5-35 us a character
(the dearest: a list literal of a thousand items), so the worst plan parses in about 0.6 s of the
first workflow task's 2 s; 64,000 took 1.9 s, at the edge of the deadlock detector."""

BINDINGS = ("result", "input", "steps", "item", "item_index", "iteration")
"""Every name ponder binds; each site binds a subset (``result`` only where there is one)."""
COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"})
FUNCTIONS = frozenset(
    {"size", "contains", "startsWith", "endsWith", "matches"}
    | {"int", "uint", "double", "string", "bool", "type"}
)
"""Callable as ``f(x, ...)`` and as ``x.f(...)``; ``has(x.f)`` and the comprehension macros are
checked on their own. ``matches`` is RE2 in cel-python >= 0.4 (linear, no backreferences)."""
TYPE_NAMES = frozenset(
    {"bool", "int", "uint", "double", "string", "list", "map", "null_type", "type"}
)
"""Type names an expression may compare with ``type(x)`` (``type(x) == list``)."""


@dataclass(frozen=True)
class Analysis:
    """What the text of one expression says, whatever its site."""

    problems: tuple[tuple[str, str], ...] = ()
    """(code, message) for what refuses it at every site."""
    names: frozenset[str] = frozenset()
    """Free names it reads (comprehension variables excluded)."""
    steps: tuple[str, ...] = ()
    """Step ids it reads as ``steps["<id>"]``, in order of first use."""
    nodes: int = 0
    depth: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


@lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """The site-independent verdict on one expression (cached by text)."""
    if len(text) > MAX_CHARS:
        return Analysis(
            (
                (
                    "expr.too_complex",
                    f"the expression is {len(text)} characters, over {MAX_CHARS}; "
                    "fix: shorten it, or compute parts in a set step",
                ),
            )
        )
    if not text.strip():
        return Analysis((("expr.syntax", "the expression is empty; fix: write one"),))
    problem = lexical_problem(text, MAX_DEPTH)
    if problem is not None:
        return Analysis((problem,))
    return load()(text)


@cache
def load() -> Callable[[str], Analysis]:
    """The parser's verdict on a text past the checks above (imported on first use)."""
    from workflows.plan.expression_parser import parsed

    return parsed


def unknown_names(analysis: Analysis, bound: Iterable[str]) -> list[str]:
    """Free names of the expression that its site does not bind, sorted."""
    return sorted(analysis.names - set(bound))
