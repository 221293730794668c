"""``${...}`` references in prompts and fan-out lists: grammar, extraction and resolution.

Pure. The forms are ``${input.<key>[.path]}`` (a run argument: ``--arg``, or a value a pause was
resumed with) and ``${steps.<id>.output[.path]}`` (an earlier step's output; a pause step's output
is its resumed value). A path is dot-separated keys or list indices into a JSON value; a string
output is parsed as JSON (code fences stripped) before a path is applied. ``$${`` writes a literal
``${``. Resolved values are spliced in once and never re-scanned, so an output that contains
``${...}`` text cannot inject a reference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from workflows.bounds import MAX_JSON_CHARS
from workflows.patterns import compile_pattern

__all__ = [
    "ARG_KEY_PATTERN",
    "Ref",
    "RefError",
    "RenderTooLong",
    "Segment",
    "extract_json",
    "parse_template",
    "render",
    "resolve",
    "whole_reference",
]

ARG_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_ARG_KEY = re.compile(ARG_KEY_PATTERN)
_STEP_ID = re.compile(r"^[a-z0-9_.:-]{1,64}$")
_PATH_PART = re.compile(r"^[A-Za-z0-9_-]+$")
# On RE2: on Python's re this match is quadratic in a model output's length (a fence line
# followed by 32,000 spaces took 2 s, in workflow code).
_FENCE = compile_pattern(r"(?s)^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$")
FORMS = "${input.<key>[.path]} or ${steps.<id>.output[.path]}"


class RefError(ValueError):
    """A malformed reference, or one that cannot be resolved against the values given."""


@dataclass(frozen=True)
class Ref:
    source: Literal["input", "steps"]
    name: str
    """The input key, or the step id."""
    path: tuple[str, ...] = ()

    def text(self) -> str:
        head = f"input.{self.name}" if self.source == "input" else f"steps.{self.name}.output"
        return "${" + ".".join((head, *self.path)) + "}"


Segment = str | Ref


class RenderTooLong(RefError):
    """Rendering passed its ``max_chars``: nothing more was spliced (a template naming a large
    value thousands of times must not be built to be measured)."""

    def __init__(self, size: int, max_chars: int) -> None:
        super().__init__(
            f"the rendered text passes {max_chars:,} characters (at least {size:,} so far)"
        )
        self.size = size
        self.max_chars = max_chars


def _parse_ref(body: str) -> Ref:
    if body.startswith("input."):
        key, *path = body[len("input.") :].split(".")
        if not _ARG_KEY.fullmatch(key):
            raise RefError(f"${{{body}}}: input key {key!r} must match {ARG_KEY_PATTERN}")
        return Ref("input", key, _check_path(body, path))
    if body.startswith("steps."):
        rest = body[len("steps.") :]
        # Step ids may contain dots, so the id ends at the first `.output` segment.
        match = re.search(r"\.output(?=\.|$)", rest)
        if match is None:
            raise RefError(f"${{{body}}}: a step reference ends in .output (form {FORMS})")
        step_id, tail = rest[: match.start()], rest[match.end() :]
        if not _STEP_ID.fullmatch(step_id):
            raise RefError(f"${{{body}}}: {step_id!r} is not a step id ([a-z0-9_.:-]{{1,64}})")
        path = tail[1:].split(".") if tail else []
        return Ref("steps", step_id, _check_path(body, path))
    raise RefError(f"${{{body}}}: unknown reference (the forms are {FORMS})")


def _check_path(body: str, path: list[str]) -> tuple[str, ...]:
    for part in path:
        if not _PATH_PART.fullmatch(part):
            raise RefError(f"${{{body}}}: path part {part!r} must be a key or an index")
    return tuple(path)


def parse_template(text: str) -> list[Segment]:
    """Split text into literal strings and references; raises RefError on a malformed one."""
    out: list[Segment] = []
    literal: list[str] = []
    i = 0
    while True:
        start = text.find("${", i)
        if start < 0:
            literal.append(text[i:])
            break
        if start > 0 and text[start - 1] == "$" and start - 1 >= i:
            literal.append(text[i : start - 1] + "${")  # `$${` is a literal `${`
            i = start + 2
            continue
        end = text.find("}", start + 2)
        if end < 0:
            raise RefError(f"an unclosed ${{ at offset {start} (write $${{ for a literal ${{)")
        literal.append(text[i:start])
        if any(literal):
            out.append("".join(literal))
        literal = []
        out.append(_parse_ref(text[start + 2 : end]))
        i = end + 1
    if any(literal):
        out.append("".join(literal))
    return out


def whole_reference(text: str) -> Ref | None:
    """The reference when ``text`` is exactly one ``${...}`` and nothing else, else None."""
    try:
        segments = parse_template(text)
    except RefError:
        return None
    return segments[0] if len(segments) == 1 and isinstance(segments[0], Ref) else None


def extract_json(text: str) -> Any:
    """The JSON value in a model's output: code fences stripped; raises ValueError, also for
    text over ``MAX_JSON_CHARS`` (never parsed: workflow code must stay cheap per output)."""
    if len(text) > MAX_JSON_CHARS:
        raise ValueError(
            f"{len(text)} characters, over the {MAX_JSON_CHARS} parsed as JSON: answer with a "
            "shorter JSON value"
        )
    fenced = _FENCE.match(text)
    return json.loads(fenced.group(1) if fenced else text)


def resolve(ref: Ref, *, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> Any:
    """The value a reference names; raises RefError when it is absent or the path misses."""
    if ref.source == "input":
        if ref.name not in inputs:
            raise RefError(
                f"{ref.text()}: no run argument {ref.name!r} (give --arg {ref.name}=...)"
            )
        value = inputs[ref.name]
    else:
        if ref.name not in outputs:
            raise RefError(f"{ref.text()}: step {ref.name!r} has no output yet")
        value = outputs[ref.name]
    if ref.path and isinstance(value, str):
        try:
            value = extract_json(value)
        except ValueError as exc:
            raise RefError(
                f"{ref.text()}: the value is not JSON, so it has no path ({exc})"
            ) from exc
    for part in ref.path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise RefError(f"{ref.text()}: no {part!r} in the value")
    return value


def render(
    text: str,
    *,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    splice: Callable[[str], str] = str,
    max_chars: int | None = None,
) -> str:
    """Text with each reference replaced by ``splice`` of its value (strings verbatim, others
    as JSON); the template's own text is kept as written. Past ``max_chars``,
    :class:`RenderTooLong` as soon as the parts so far pass it."""
    parts: list[str] = []
    size = 0
    for segment in parse_template(text):
        if isinstance(segment, str):
            part = segment
        else:
            value = resolve(segment, inputs=inputs, outputs=outputs)
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            part = splice(shown)
        size += len(part)
        if max_chars is not None and size > max_chars:
            raise RenderTooLong(size, max_chars)
        parts.append(part)
    return "".join(parts)
