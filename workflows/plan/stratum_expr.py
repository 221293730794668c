"""Stratum's expression language and ``${...}`` references, translated for ponder.

Pure, text to text: nothing here evaluates anything. A stratum expression is parsed with the
reference's grammar (literals, ``result``/``input``/``item``/``prev``, ``.member``, ``[n]``,
calls, ``! -``, ``* / + -``, comparisons and ``in``, ``&& ||``) and written back as CEL for
ponder's bounded evaluator, which validates it again like any plan expression. Where the two
languages would not agree on a value, the expression is refused rather than approximated:

- ``len(x)`` -> ``size(x)``; ``matches(s, re)`` stays (RE2 in ponder);
- ``a / b`` -> ``double(a) / double(b)`` (the reference divides as JavaScript does);
- ``a in b`` also tests a substring when ``b`` is a string, as the reference does;
- ``prev`` (a fan-out stage's previous stage) -> ``steps["<that stage's step>"]``;
- ``result.<id>`` in a ``set`` value (where the reference binds completed steps to ``result``)
  -> ``steps["<id>"]``;
- ``file_exists(p)`` / ``file_contains(p, t)`` only as a whole predicate or a top-level ``&&``
  operand: each becomes a ``file_exists`` / ``file_contains`` ensure of its own;
- ``any all max min str int bool`` are refused (their truthiness and conversions have no exact
  CEL counterpart).

References: ``${input.a[0]}`` -> ``${input.a.0}``, ``${step.output.x}`` ->
``${steps.step.output.x}``, ``${prev}`` -> the previous stage's output; ``${item}``
(``${item.x}``) in a fan-out stage's prompt becomes ``[item]`` (``[item.x]``), naming the item
ponder appends to every branch's prompt (``This branch handles the item: ...``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ExprError",
    "ExprSite",
    "Translated",
    "reference_steps",
    "translate_expression",
    "translate_template",
]

_STEP_REF = re.compile(r"^([a-z][a-z0-9_-]*)\.output(.*)$")
_PATH = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]")
_NUMBER = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "!")
_BLOCKED = {"__proto__", "constructor", "prototype"}
# CEL reserves these; a member of that name is read as ["name"].
_CEL_RESERVED = {
    "as", "break", "const", "continue", "else", "false", "for", "function", "if", "import",
    "in", "let", "loop", "package", "namespace", "null", "return", "true", "var", "void",
    "while",
}  # fmt: skip
_REFUSED_FUNCTIONS = {"any", "all", "max", "min", "str", "int", "bool"}
_FILE_FUNCTIONS = {"file_exists": 1, "file_contains": 2}
MAX_DEPTH = 64
MAX_NODES = 400
MAX_CHARS = 2_000


class ExprError(ValueError):
    """An expression or reference with no exact translation; the message says why."""


@dataclass(frozen=True)
class ExprSite:
    """What a site binds: ``result`` (an output under test, or the completed steps in a set
    value), ``item`` and ``prev`` (a fan-out stage; ``prev`` is the previous stage's step)."""

    result: str = "output"  # "output" | "steps" | "none"
    item: bool = False
    prev: str | None = None


@dataclass
class Translated:
    """A predicate as CEL plus the file checks split out of it (each an ensure of its own)."""

    cel: str | None
    files: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Tok:
    kind: str  # string | number | ident | op | punct | eof
    text: str
    value: Any = None


def _lex(source: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    while True:
        while i < len(source) and source[i].isspace():
            i += 1
        if i >= len(source):
            out.append(_Tok("eof", ""))
            return out
        c = source[i]
        if c in "\"'":
            value, i = _string(source, i)
            out.append(_Tok("string", "", value))
        elif c in "0123456789":
            m = _NUMBER.match(source, i)
            assert m is not None
            out.append(_Tok("number", m.group(0)))
            i += len(m.group(0))
        elif c.isascii() and (c.isalpha() or c == "_"):
            m = _WORD.match(source, i)
            assert m is not None
            word = m.group(0)
            out.append(_Tok("op" if word == "in" else "ident", word))
            i += len(word)
        else:
            op = next((o for o in _OPERATORS if source.startswith(o, i)), None)
            if op is not None:
                out.append(_Tok("op", op))
                i += len(op)
            elif c in "().[],":
                out.append(_Tok("punct", c))
                i += 1
            else:
                raise ExprError(f"unexpected character {c!r} at position {i}")


def _string(source: str, start: int) -> tuple[str, int]:
    quote = source[start]
    i = start + 1
    chars: list[str] = []
    simple = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f"}
    simple |= {"n": "\n", "r": "\r", "t": "\t"}
    while i < len(source):
        c = source[i]
        i += 1
        if c == quote:
            return "".join(chars), i
        if ord(c) < 0x20:
            raise ExprError(f"unescaped control character in a string at position {i - 1}")
        if c != "\\":
            chars.append(c)
            continue
        esc = source[i] if i < len(source) else ""
        i += 1
        if esc in simple:
            chars.append(simple[esc])
        elif esc == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", source[i : i + 4]):
            chars.append(chr(int(source[i : i + 4], 16)))
            i += 4
        else:
            raise ExprError(f"invalid escape \\{esc} at position {i - 2}")
    raise ExprError(f"unterminated string at position {start}")


# A parsed node: ("lit", value) | ("num", text) | ("id", name) | ("member", node, name) |
# ("index", node, n) | ("call", name, [args]) | ("unary", op, node) | ("bin", op, l, r)
Node = tuple[Any, ...]
_LEVELS = (("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/"))


class _Parser:
    def __init__(self, source: str) -> None:
        self.toks = _lex(source)
        self.at = 0
        self.depth = 0
        self.nodes = 0

    def node(self, *parts: Any) -> Node:
        # Bounded like ponder's own expressions, so writing one back never recurses deeply.
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExprError(f"the expression has over {MAX_NODES} syntax nodes")
        return parts

    @property
    def cur(self) -> _Tok:
        return self.toks[self.at]

    def take(self) -> _Tok:
        tok = self.toks[self.at]
        self.at += 1
        return tok

    def expect(self, text: str) -> None:
        if self.cur.text != text or self.cur.kind not in ("punct", "op"):
            raise ExprError(f"expected {text!r}")
        self.take()

    def parse(self) -> Node:
        node = self.binary(0)
        if self.cur.kind != "eof":
            raise ExprError(f"unexpected token {self.cur.text!r}")
        return node

    def binary(self, level: int) -> Node:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.cur.kind == "op" and self.cur.text in _LEVELS[level]:
            op = self.take().text
            left = self.node("bin", op, left, self.binary(level + 1))
        return left

    def nested(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"the expression nests deeper than {MAX_DEPTH}")
        try:
            return self.binary(0)
        finally:
            self.depth -= 1

    def unary(self) -> Node:
        if self.cur.kind == "op" and self.cur.text in ("!", "-"):
            op = self.take().text
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ExprError(f"the expression nests deeper than {MAX_DEPTH}")
            try:
                return self.node("unary", op, self.unary())
            finally:
                self.depth -= 1
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while self.cur.kind == "punct" and self.cur.text in ".[":
            if self.take().text == ".":
                if self.cur.kind != "ident":
                    raise ExprError("member access requires a property name")
                name = self.take().text
                if name in _BLOCKED:
                    raise ExprError(f"member {name!r} is forbidden")
                node = self.node("member", node, name)
            else:
                tok = self.take()
                if tok.kind != "number" or not tok.text.isdigit():
                    raise ExprError("index access requires a non-negative integer literal")
                self.expect("]")
                node = self.node("index", node, int(tok.text))
        return node

    def primary(self) -> Node:
        tok = self.take()
        if tok.kind == "string":
            return self.node("lit", tok.value)
        if tok.kind == "number":
            return self.node("num", tok.text)
        if tok.kind == "ident":
            if tok.text in ("true", "false", "null"):
                return self.node("lit", {"true": True, "false": False, "null": None}[tok.text])
            if not (self.cur.kind == "punct" and self.cur.text == "("):
                return self.node("id", tok.text)
            self.take()
            args: list[Node] = []
            if not (self.cur.kind == "punct" and self.cur.text == ")"):
                while True:
                    args.append(self.nested())
                    if not (self.cur.kind == "punct" and self.cur.text == ","):
                        break
                    self.take()
            self.expect(")")
            return self.node("call", tok.text, args)
        if tok.kind == "punct" and tok.text == "(":
            node = self.nested()
            self.expect(")")
            return node
        raise ExprError("expected a literal, a name, a call or a parenthesised expression")


def _cel_string(value: str) -> str:
    # JSON's escapes are CEL's too; non-ASCII stays literal (CEL has no surrogate escapes).
    return json.dumps(value, ensure_ascii=False)


def _emit(node: Node, site: ExprSite) -> str:
    kind = node[0]
    if kind == "lit":
        value = node[1]
        if isinstance(value, str):
            return _cel_string(value)
        return "null" if value is None else ("true" if value else "false")
    if kind == "num":
        return str(node[1])
    if kind == "id":
        return _identifier(node[1], site)
    if kind == "member":
        target, name = node[1], node[2]
        if site.result == "steps" and target == ("id", "result"):
            return f"steps[{_cel_string(name)}]"
        base = _emit(target, site)
        return f"{base}[{_cel_string(name)}]" if name in _CEL_RESERVED else f"{base}.{name}"
    if kind == "index":
        return f"{_emit(node[1], site)}[{node[2]}]"
    if kind == "call":
        return _call(node[1], node[2], site)
    if kind == "unary":
        return f"{node[1]}({_emit(node[2], site)})"
    op, left, right = node[1], _emit(node[2], site), _emit(node[3], site)
    if op == "/":
        return f"(double({left}) / double({right}))"
    if op == "in":
        return f"(type({right}) == string ? ({right}).contains({left}) : ({left}) in ({right}))"
    return f"({left} {op} {right})"


def _identifier(name: str, site: ExprSite) -> str:
    if name == "input":
        return "input"
    if name == "result":
        if site.result == "output":
            return "result"
        if site.result == "steps":
            raise ExprError("result (the completed steps) is read only as result.<step id> here")
        raise ExprError("result is not bound here")
    if name == "item":
        if not site.item:
            raise ExprError("item is bound only in a fan-out stage")
        return "item"
    if name == "prev":
        if site.prev is None:
            raise ExprError(
                "prev is bound only in a fan-out stage after the first"
                if site.item
                else "prev is bound only in a fan-out stage"
            )
        return f"steps[{_cel_string(site.prev)}]"
    raise ExprError(f"unknown identifier {name!r} (the reference binds result, input, item, prev)")


def _call(name: str, args: list[Node], site: ExprSite) -> str:
    if name in _FILE_FUNCTIONS:
        raise ExprError(
            f"{name}() is translated only as a whole predicate or an operand of a top-level &&"
        )
    if name in _REFUSED_FUNCTIONS:
        raise ExprError(f"{name}() has no exact CEL translation (its conversions differ)")
    if name == "len":
        if len(args) != 1:
            raise ExprError(f"len expects 1 argument, received {len(args)}")
        return f"size({_emit(args[0], site)})"
    if name == "matches":
        if len(args) != 2:
            raise ExprError(f"matches expects 2 arguments, received {len(args)}")
        return f"matches({_emit(args[0], site)}, {_emit(args[1], site)})"
    raise ExprError(f"unknown function {name!r}")


def _top(node: Node, site: ExprSite) -> str:
    """``node`` without the parentheses its own operator would add (they only group operands)."""
    text = _emit(node, site)
    simple = node[0] == "bin" and node[1] not in ("/", "in")
    return text[1:-1] if simple else text


def _conjuncts(node: Node) -> list[Node]:
    if node[0] == "bin" and node[1] == "&&":
        return _conjuncts(node[2]) + _conjuncts(node[3])
    return [node]


def _path_template(node: Node, site: ExprSite) -> str:
    """A file function's argument as a ponder path template: a string literal, or a member path
    into ``input`` (``input.dir`` -> ``${input.dir}``)."""
    if node[0] == "lit" and isinstance(node[1], str):
        return str(node[1]).replace("${", "$${")
    parts: list[str] = []
    while node[0] in ("member", "index"):
        parts.append(str(node[2]))
        node = node[1]
    if node == ("id", "input") and parts:
        return "${input." + ".".join(reversed(parts)) + "}"
    raise ExprError("a file function takes a string literal or an input.<field> path")


def _file_check(node: Node, site: ExprSite) -> dict[str, Any]:
    name, args = node[1], node[2]
    if len(args) != _FILE_FUNCTIONS[name]:
        raise ExprError(f"{name} expects {_FILE_FUNCTIONS[name]} argument(s), received {len(args)}")
    path = _path_template(args[0], site)
    if name == "file_exists":
        return {"file_exists": path}
    text = args[1]
    if not (text[0] == "lit" and isinstance(text[1], str)):
        raise ExprError("file_contains takes its text as a string literal")
    return {"file_contains": {"path": path, "text": text[1]}}


def translate_expression(source: object, site: ExprSite, *, predicate: bool = True) -> Translated:
    """``source`` as CEL (``predicate``: file checks split out of a top-level ``&&``)."""
    if not isinstance(source, str) or not source.strip():
        raise ExprError("an expression must be non-empty text")
    if len(source) > MAX_CHARS:
        raise ExprError(f"the expression is over {MAX_CHARS:,} characters")
    node = _Parser(source).parse()
    if not predicate:
        return Translated(_top(node, site))
    files: list[dict[str, Any]] = []
    rest: list[Node] = []
    for part in _conjuncts(node):
        if part[0] == "call" and part[1] in _FILE_FUNCTIONS:
            files.append(_file_check(part, site))
        else:
            rest.append(part)
    if not rest:
        return Translated(None, files)
    if len(rest) == 1:
        return Translated(_top(rest[0], site), files)
    return Translated(" && ".join(_emit(part, site) for part in rest), files)


def _reference(body: str, site: ExprSite) -> str:
    if body == "item":
        if not site.item:
            raise ExprError("${item} is available only in a fan-out stage")
        return "[item]"  # the item itself closes every branch's prompt
    if body == "prev":
        if site.prev is None:
            raise ExprError(
                "${prev} has no previous stage in the first fan-out stage"
                if site.item
                else "${prev} is available only in a fan-out stage"
            )
        return "${steps." + site.prev + ".output}"
    if body.startswith("item.") and site.item:
        path = _path(body[len("item") :])
        if path:
            return "[item." + ".".join(path) + "]"
    if body.startswith("input."):
        path = _path(body[len("input") :])
        if not path:
            raise ExprError(f"${{{body}}} is not a reference the reference accepts")
        return "${input." + ".".join(path) + "}"
    m = _STEP_REF.match(body)
    if m is None:
        raise ExprError(f"${{{body}}} is not a reference the reference accepts")
    tail = _path(m.group(2))
    if tail is None:
        raise ExprError(f"${{{body}}} has a malformed path")
    return "${" + ".".join(["steps", m.group(1), "output", *tail]) + "}"


def _path(text: str) -> list[str] | None:
    parts: list[str] = []
    at = 0
    while at < len(text):
        m = _PATH.match(text, at)
        if m is None:
            return None
        parts.append(m.group(1) or m.group(2))
        at = m.end()
    return parts


def _refs(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, body)`` of each ``${...}``: the body runs to the next ``}`` (the
    reference's ``\\$\\{([^}]*)\\}``), found in one pass (a regex would rescan an unclosed
    ``${`` from every later start: quadratic in a 200,000-character prompt)."""
    at = 0
    while True:
        start = text.find("${", at)
        if start < 0:
            return
        end = text.find("}", start + 2)
        if end < 0:
            raise ExprError("an unclosed ${")
        yield start, end + 1, text[start + 2 : end]
        at = end + 1


def translate_template(text: str, site: ExprSite) -> str:
    """A prompt, ``with`` value or ``over`` with its references in ponder's forms."""
    out: list[str] = []
    at = 0
    for start, end, body in _refs(text):
        literal = text[at:start]
        if literal.endswith("$"):
            # ponder reads `$${` as a literal `${`; the reference does not.
            raise ExprError("a `$` directly before ${...} has no translation")
        out.append(literal)
        out.append(_reference(body, site))
        at = end
    out.append(text[at:])
    return "".join(out)


def reference_steps(text: str) -> list[str]:
    """The step ids ``text``'s references read (the reference makes each a dependency)."""
    ids: list[str] = []
    try:
        for _, _, body in _refs(text):
            ref = _STEP_REF.match(body)
            if ref is not None and ref.group(1) not in ids:
                ids.append(ref.group(1))
    except ExprError:
        pass  # translate_template reports it
    return ids
