"""Workflow input is untrusted JSON: one strict base model and one decoder for every workflow.

Pure (pydantic only, no Temporal import). Workflows take their input raw and decode it inside
the workflow with :func:`decode_json`, so input that ``temporal workflow start`` (or any client)
sends and that does not decode or validate fails the run with ``input.invalid`` at once, instead
of failing the workflow task (and retrying it) forever. ``workflows/raw_input.py`` is the
Temporal side of the same mechanism.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = [
    "INPUT_INVALID",
    "InputInvalid",
    "StrictModel",
    "decode_input",
    "decode_json",
    "describe_errors",
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


class InputInvalid(Exception):
    """Input that does not decode into its model; ``message`` names each path and rule."""

    code = INPUT_INVALID

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decode_json(model: type[M], data: bytes | str) -> M:
    """``model`` from JSON text, or :class:`InputInvalid` naming every problem."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise InputInvalid(f"{model.__name__}: {describe_errors(exc)}") from None


def decode_input(model: type[M], value: object) -> M:
    """``model`` from an already parsed JSON value (a dict), or :class:`InputInvalid`."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise InputInvalid(f"{model.__name__}: {describe_errors(exc)}") from None


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
