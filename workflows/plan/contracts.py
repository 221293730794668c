"""Output contracts: named record types that a step's ``out`` output must match.

Pure. A contract maps field names to a type: ``string``, ``number``, ``integer``, ``boolean``,
``object``, ``array``, ``any`` or another contract's name, with ``[]`` suffixes for lists and a
trailing ``?`` for a field that may be absent or null (the reference spec engine's field types).
Extra fields in an output are allowed; the contract states what must be there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workflows.plan.refs import extract_json

__all__ = ["PRIMITIVES", "TypeRef", "check_output", "check_record", "parse_type"]

PRIMITIVES = ("string", "number", "integer", "boolean", "object", "array", "any")
_TYPE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\])*)(\??)$")


@dataclass(frozen=True)
class TypeRef:
    base: str
    list_depth: int
    optional: bool


def parse_type(expr: str, contracts: Mapping[str, object]) -> TypeRef:
    """Parse a field type; raises ValueError naming the allowed forms."""
    match = _TYPE.fullmatch(expr)
    if match is None:
        raise ValueError(f"type {expr!r} is malformed (form: name, name[], name?)")
    base, lists, optional = match.groups()
    if base not in PRIMITIVES and base not in contracts:
        raise ValueError(
            f"type {expr!r} names neither a primitive ({', '.join(PRIMITIVES)}) nor a contract"
        )
    return TypeRef(base, len(lists) // 2, bool(optional))


def _matches(value: Any, ref: TypeRef, contracts: Mapping[str, Mapping[str, str]]) -> str | None:
    for _ in range(ref.list_depth):
        if not isinstance(value, list):
            return f"expected a list, got {type(value).__name__}"
        for i, item in enumerate(value):
            inner = TypeRef(ref.base, ref.list_depth - 1, False)
            problem = _matches(item, inner, contracts)
            if problem is not None:
                return f"[{i}]: {problem}"
        return None
    base = ref.base
    ok = {
        "string": lambda v: isinstance(v, str),
        "number": lambda v: (
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        ),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "any": lambda v: True,
    }.get(base)
    if ok is not None:
        return None if ok(value) else f"expected {base}, got {type(value).__name__}"
    return _record(value, base, contracts)


def _record(value: Any, name: str, contracts: Mapping[str, Mapping[str, str]]) -> str | None:
    if not isinstance(value, dict):
        return f"expected a {name} object, got {type(value).__name__}"
    return check_record(value, contracts[name], contracts, name=name)


def check_record(
    value: dict[str, Any],
    fields: Mapping[str, str],
    contracts: Mapping[str, Mapping[str, str]],
    *,
    name: str = "input",
) -> str | None:
    """Why a mapping does not meet ``fields`` (field -> type; a named contract's, or a sub-flow's
    inline input), or None."""
    for field, expr in fields.items():
        ref = parse_type(expr, contracts)
        if value.get(field) is None:
            if ref.optional:
                continue
            return f"{field}: missing (contract {name} requires it)"
        problem = _matches(value[field], ref, contracts)
        if problem is not None:
            return f"{field}: {problem}"
    return None


def check_output(
    text: str, name: str, contracts: Mapping[str, Mapping[str, str]]
) -> tuple[Any, str | None]:
    """Parse an output as JSON (fences stripped) and check it against contract ``name``.

    Returns ``(value, None)`` or ``(None, why)``; ``why`` is what the retry shows the model.
    """
    try:
        value = extract_json(text)
    except ValueError as exc:
        return None, f"the output is not JSON ({exc}); answer with one JSON object"
    problem = _record(value, name, contracts)
    return (value, None) if problem is None else (None, f"contract {name}: {problem}")
