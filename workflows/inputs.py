"""Workflow input is untrusted JSON: one strict base model and one decoder for every workflow.

Pure (pydantic only, no Temporal import). Workflows take their input raw and decode it inside
the workflow with :func:`decode_json`, so input that ``temporal workflow start`` (or any client)
sends and that does not decode or validate fails the run with ``input.invalid`` at once, instead
of failing the workflow task (and retrying it) forever. ``workflows/raw_input.py`` is the
Temporal side of the same mechanism.

Every field has its own ceiling (``workflows/bounds.py``); as a backstop, an integer anywhere in a
decoded input (a plan argument, a campaign variant's config) must fit in 64 bits, because
history, raw events and providers take no more and would otherwise fail long after the start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from workflows.bounds import MAX_INT, MIN_INT
from workflows.errors import PonderError

__all__ = [
    "INPUT_INVALID",
    "InputInvalid",
    "StrictModel",
    "decode_input",
    "decode_json",
    "describe_errors",
    "out_of_range_integer",
]

INPUT_INVALID = "input.invalid"
MAX_REPORTED_ERRORS = 5
MAX_SHOWN_VALUE = 60

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """A boundary model: unknown fields, non-finite numbers (NaN, Infinity) and wrong types are
    refused. Strict: ``"8"`` is not 8 and ``1`` is not ``true``; input decodes from JSON text
    (``decode_json``), where strict mode still takes what JSON has no word for (a string for an
    enum, a date or a time, an array for a tuple) and an integer for a float."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class InputInvalid(PonderError):
    """Input that does not decode into its model; ``message`` names each path and rule.
    ``code`` is ``input.invalid`` unless a validator refused with a code of its own."""

    def __init__(self, message: str, *, code: str = INPUT_INVALID) -> None:
        super().__init__(code, message)


def _code_of(exc: ValidationError) -> str:
    """The first ponder code a validator refused with (a ``PydanticCustomError`` whose type is
    ``family.name``; pydantic's own types have no dot), else ``input.invalid``."""
    for error in exc.errors(include_url=False):
        if "." in error["type"]:
            return error["type"]
    return INPUT_INVALID


def decode_json(model: type[M], data: bytes | str) -> M:
    """``model`` from JSON text, or :class:`InputInvalid` naming every problem."""
    try:
        decoded = model.model_validate_json(data)
    except ValidationError as exc:
        raise InputInvalid(
            f"{model.__name__}: {describe_errors(exc)}", code=_code_of(exc)
        ) from None
    return _in_range(decoded)


def decode_input(model: type[M], value: object) -> M:
    """``model`` from an already parsed JSON value (a dict), or :class:`InputInvalid`."""
    try:
        decoded = model.model_validate(value)
    except ValidationError as exc:
        raise InputInvalid(
            f"{model.__name__}: {describe_errors(exc)}", code=_code_of(exc)
        ) from None
    return _in_range(decoded)


def _in_range(decoded: M) -> M:
    """``decoded``, or :class:`InputInvalid` naming the first integer outside 64 bits."""
    found = out_of_range_integer(decoded)
    if found is not None:
        path, value = found
        raise InputInvalid(
            f"{type(decoded).__name__}: {path or '(the input itself)'}: integer out of range: "
            f"give one from -2**63 to 2**63 - 1 (got {_short(value)})"
        )
    return decoded


def out_of_range_integer(value: object) -> tuple[str, int] | None:
    """``(path, value)`` of the first integer in ``value`` (a model, dict, list...) outside
    ``[-2**63, 2**63 - 1]``, or None. Iterative: nesting depth costs no stack."""
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not MIN_INT <= item <= MAX_INT:
                return path, item
            continue
        children: Iterable[tuple[Any, object]]
        if isinstance(item, BaseModel):
            fields = type(item).model_fields
            children = [
                (fields[name].alias or name, getattr(item, name)) for name in fields
            ] + list((item.__pydantic_extra__ or {}).items())
        elif isinstance(item, dict):
            children = item.items()
        elif isinstance(item, list | tuple | set | frozenset):
            children = enumerate(item)
        else:
            continue
        pending = [(f"{path}.{key}" if path else str(key), child) for key, child in children]
        stack.extend(reversed(pending))  # popped in input order: the first bad one is named
    return None


def describe_errors(exc: ValidationError) -> str:
    """``path: message (got value)`` per error, at most a few, joined by ``; ``."""
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:MAX_REPORTED_ERRORS]:
        path = ".".join(str(p) for p in error["loc"]) or "(the input itself)"
        text = f"{path}: {error['msg']}"
        if error["type"] not in ("missing", "json_invalid") and error["loc"]:
            text += f" (got {_short(error['input'])})"
        parts.append(text)
    if len(errors) > MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - MAX_REPORTED_ERRORS} more")
    return "; ".join(parts)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_VALUE else text[: MAX_SHOWN_VALUE - 3] + "..."
