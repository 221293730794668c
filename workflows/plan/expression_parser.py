"""The CEL parser of plan expressions and the walk over its tree (lark, with cel-python's own
grammar file; nothing of cel-python's evaluator is imported).

Pure. ``workflows.plan.expressions`` holds the rules (bounds, functions, bindings) and loads this
module on the first expression it analyses: lark and the grammar's tables cost tens of
milliseconds to load, which a plan without expressions never needs.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from workflows.plan.expression_lexing import linear_grammar
from workflows.plan.expressions import (
    BINDINGS,
    COMPREHENSIONS,
    FUNCTIONS,
    MAX_COMPREHENSION_NESTING,
    MAX_DEPTH,
    MAX_NODES,
    TYPE_NAMES,
    Analysis,
)

__all__ = ["build_parser", "parsed"]

# Rules that only pass one child through: they are not nodes of the expression's AST.
_CHAIN = frozenset(
    {
        "expr",
        "conditionalor",
        "conditionaland",
        "relation",
        "addition",
        "multiplication",
        "unary",
        "member",
        "primary",
    }
)
# Operator marker rules (``addition_add: addition "+"``): the parent with two children is the
# operation, so these are not counted again.
_OPERATORS = re.compile(r"^(relation|addition|multiplication)_[a-z]+$|^unary_(not|neg)$")
_lock = threading.Lock()


def _grammar() -> str:
    """cel-python's grammar, read without importing cel-python (its evaluator pulls in time-zone
    data and RE2, which validation never needs), with its string terminals made linear."""
    spec = importlib.util.find_spec("celpy")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("cel-python is not installed (pip install cel-python)")
    grammar = (Path(next(iter(spec.submodule_search_locations))) / "cel.lark").read_text()
    return linear_grammar(grammar)


def _bool_literals(token: Token) -> Token:
    # cel-python's own lexer callback: `true`/`false` are literals, not identifiers.
    if token.value in ("true", "false"):
        return Token("BOOL_LIT", token.value)
    return token


def build_parser(cache: Path | None) -> Lark:
    """The CEL parser. The options are cel-python's (same language, same trees) without its
    debug and position tracking, which only cost time.

    Lark's analysis of the grammar costs ~0.2 s of CPU in every process that validates plans
    (each worker, each ``ponder plan`` command); with ``cache`` it is kept in that file, keyed by
    the grammar, the options and the Lark and Python versions, and a file it cannot read or
    write is rebuilt in memory. The file is a pickle: keep it where only whoever may change this
    code can write (``_parser_cache``)."""
    return Lark(
        _grammar(),
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": _bool_literals},
        maybe_placeholders=False,
        priority="invert",
        cache=str(cache) if cache is not None else False,
    )


def _parser_cache() -> Path | None:
    """Beside this module's bytecode, or none where that folder cannot be made."""
    folder = Path(__file__).with_name("__pycache__")
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    return folder / "cel-grammar.lark-cache"


# Built at import: the worker loads this module before any workflow task runs, so no task (and
# no replay) pays for it inside Temporal's deadlock window.
_PARSER = build_parser(_parser_cache())


@dataclass
class _Walk:
    problems: list[tuple[str, str]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    steps: list[str] = field(default_factory=list)
    steps_ok: set[int] = field(default_factory=set)
    """id() of ``steps`` identifier nodes used as ``steps["<literal>"]``."""
    nodes: int = 0
    depth: int = 0

    def problem(self, code: str, message: str) -> None:
        if (code, message) not in self.problems:
            self.problems.append((code, message))


def _unwrap(node: Any) -> Any:
    """The node under any one-child chain rules (``member -> primary -> ident``)."""
    while (
        isinstance(node, Tree) and node.data in _CHAIN | {"paren_expr"} and len(node.children) == 1
    ):
        node = node.children[0]
    return node


def _ident(node: Any) -> str | None:
    node = _unwrap(node)
    if isinstance(node, Tree) and node.data == "ident" and isinstance(node.children[0], Token):
        return str(node.children[0])
    return None


def _string_literal(node: Any) -> str | None:
    """The value of a plain string literal (no escapes, no raw prefix needed), else None."""
    node = _unwrap(node)
    if not (isinstance(node, Tree) and node.data == "literal" and node.children):
        return None
    token = node.children[0]
    if not isinstance(token, Token) or token.type != "STRING_LIT":
        return None
    text = str(token)
    if text[:1] in "rR":
        text = text[1:]
    body = text[1:-1]
    return None if "\\" in body else body


def _arguments(node: Tree) -> list[Any]:
    """The argument expressions of a call node (its ``exprlist``, if any)."""
    for child in node.children:
        if isinstance(child, Tree) and child.data == "exprlist":
            return list(child.children)
    return []


def _mark_step_refs(tree: Tree, walk: _Walk) -> None:
    """Find ``steps["<id>"]`` (a member index on the bare name with a literal key)."""
    for node in tree.iter_subtrees():
        if node.data != "member_index" or len(node.children) != 2:
            continue
        target, key = node.children
        if _ident(target) != "steps":
            continue
        literal = _string_literal(key)
        if literal is None:
            continue
        walk.steps_ok.add(id(_unwrap(target)))
        if literal not in walk.steps:
            walk.steps.append(literal)


def _walk(tree: Tree, walk: _Walk) -> None:
    """One iterative pass (no recursion: the tree of a 2,000-character text can be thousands of
    rules deep) counting nodes and depth and checking names, calls and macros."""
    # (node, depth, comprehension level, bound comprehension variables)
    stack: list[tuple[Any, int, int, frozenset[str]]] = [(tree, 0, 0, frozenset())]
    while stack:
        node, depth, level, bound = stack.pop()
        if not isinstance(node, Tree):
            continue
        counts = not (
            (node.data in _CHAIN and len(node.children) == 1) or _OPERATORS.match(node.data)
        ) and node.data not in ("exprlist", "fieldinits", "mapinits")
        if counts:
            depth += 1
            walk.nodes += 1
            walk.depth = max(walk.depth, depth)
        data = node.data
        children = list(node.children)
        if data in ("ident", "dot_ident"):
            name = str(node.children[0])
            if name == "steps" and id(node) not in walk.steps_ok:
                walk.problem(
                    "expr.dynamic_ref",
                    'steps is read only as steps["<id>"] with a literal step id (so the '
                    "validator can check the step runs earlier); fix: write "
                    'steps["<id>"].field',
                )
            if name not in bound and name not in TYPE_NAMES:
                walk.names.add(name)
            continue
        if (
            data == "member_index"
            and _ident(children[0]) == "steps"
            and children[1:]
            and _string_literal(children[1]) is None
        ):
            walk.steps_ok.add(id(_unwrap(children[0])))  # reported once, here
            walk.problem(
                "expr.dynamic_ref",
                "steps[...] takes a literal step id, not a computed key or one with "
                'escapes; fix: write steps["<id>"]',
            )
        if data == "member_dot":
            target = children[0]
            if _ident(target) == "steps" and id(_unwrap(target)) not in walk.steps_ok:
                walk.steps_ok.add(id(_unwrap(target)))  # reported once, below
                walk.problem(
                    "expr.dynamic_ref",
                    f"steps.{children[1]} is ambiguous (step ids may hold dots); fix: write "
                    f'steps["{children[1]}"]',
                )
        if data == "member_object":
            walk.problem(
                "expr.function",
                "message construction (Type{field: ...}) is not available in plan "
                "expressions; fix: build a map {'field': ...}",
            )
        if data in ("ident_arg", "dot_ident_arg"):
            name = str(children[0])
            arguments = _arguments(node)
            if name == "has":
                inner = _unwrap(arguments[0]) if len(arguments) == 1 else None
                if not (isinstance(inner, Tree) and inner.data == "member_dot"):
                    walk.problem(
                        "expr.function",
                        "has() takes one field selection, e.g. has(result.score); "
                        "fix: write has(<value>.<field>)",
                    )
            elif name in COMPREHENSIONS:
                walk.problem(
                    "expr.function",
                    f"{name} is a macro on a list or map: fix: write <list>.{name}(x, ...)",
                )
            elif name not in FUNCTIONS:
                walk.problem("expr.function", _not_a_function(name))
            stack.extend((a, depth, level, bound) for a in reversed(arguments))
            continue
        if data == "member_dot_arg":
            target, method = children[0], str(children[1])
            arguments = _arguments(node)
            if method in COMPREHENSIONS:
                var = _ident(arguments[0]) if len(arguments) == 2 else None
                if var is None:
                    walk.problem(
                        "expr.function",
                        f"{method}() takes a variable name and one expression, e.g. "
                        f"items.{method}(x, x > 0); fix: write <list>.{method}(<name>, <expr>)",
                    )
                    stack.extend((a, depth, level, bound) for a in reversed(arguments))
                    stack.append((target, depth, level, bound))
                    continue
                if var in BINDINGS:
                    walk.problem(
                        "expr.function",
                        f"{method}({var}, ...) would hide the binding {var!r}; "
                        "fix: name the variable something else",
                    )
                if level + 1 > MAX_COMPREHENSION_NESTING:
                    walk.problem(
                        "expr.too_complex",
                        f"comprehensions are nested more than {MAX_COMPREHENSION_NESTING} deep "
                        f"({method} inside {level}); every level multiplies the iterations; "
                        "fix: flatten the expression",
                    )
                stack.append((arguments[1], depth, level + 1, bound | {var}))
                stack.append((target, depth, level, bound))
                continue
            if method not in FUNCTIONS:
                walk.problem("expr.function", _not_a_function(method, method=True))
        stack.extend((c, depth, level, bound) for c in reversed(children))


def _not_a_function(name: str, *, method: bool = False) -> str:
    shown = f".{name}()" if method else f"{name}()"
    why = (
        " (timestamps and durations load time-zone data the expression names)"
        if name in ("timestamp", "duration") or name.startswith("get")
        else ""
    )
    allowed = ", ".join(sorted(FUNCTIONS | {"has"} | COMPREHENSIONS))
    return f"{shown} is not a plan expression function{why}; fix: use one of {allowed}"


def _syntax_message(exc: LarkError, text: str) -> str:
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        return "the expression ends too early"
    if isinstance(exc, UnexpectedToken | UnexpectedCharacters):
        column = getattr(exc, "column", "?")
        found = ""
        if isinstance(exc, UnexpectedToken):
            found = f" {str(exc.token)[:20]!r}"
        elif isinstance(exc, UnexpectedCharacters):
            at = exc.pos_in_stream or 0
            found = f" {text[at : at + 1]!r}"
        return f"unexpected{found} at column {column}"
    return str(exc).splitlines()[0][:200]


def parsed(text: str) -> Analysis:
    """The verdict on a text that passed ``expressions.analyse``'s length and lexical checks."""
    try:
        with _lock:
            tree = _PARSER.parse(text)
    except LarkError as exc:
        return Analysis(
            (("expr.syntax", f"{_syntax_message(exc, text)}; fix: correct the CEL syntax"),)
        )
    walk = _Walk()
    _mark_step_refs(tree, walk)
    _walk(tree, walk)
    if walk.nodes > MAX_NODES:
        walk.problem(
            "expr.too_complex",
            f"the expression has {walk.nodes} nodes, over {MAX_NODES}; "
            "fix: split it, or compute parts in a set step",
        )
    if walk.depth > MAX_DEPTH:
        walk.problem(
            "expr.too_complex",
            f"the expression nests {walk.depth} deep, over {MAX_DEPTH}; fix: flatten it",
        )
    return Analysis(
        tuple(walk.problems),
        frozenset(walk.names),
        tuple(walk.steps),
        walk.nodes,
        walk.depth,
    )
