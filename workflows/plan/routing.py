"""Which model runs a plan step, which family it belongs to, and resume-value checks.

Pure. A step's model is a ``provider:model`` spec, or a ``loop-plan/1`` family name resolved as
in the reference (``sonnet``, ``opus``, ``haiku``, ``claude*`` -> claude; ``codex*``, ``gpt*``,
``openai*`` -> openai) through the run's executors (``--executor FAMILY=PROVIDER_SPEC``); a step
without a model runs on ``--default-family``'s executor. Routing comes from the run's input,
never from the worker that happens to run the task.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical_family", "check_value", "route", "step_family"]


def canonical_family(name: str) -> str | None:
    """The family a model or family name stands for, or None when it names none."""
    lowered = name.strip().lower()
    if lowered in ("sonnet", "opus", "haiku") or lowered.startswith("claude"):
        return "claude"
    if lowered.startswith(("codex", "gpt", "openai")):
        return "openai"
    return None


def route(
    model: str | None,
    family: str | None,
    *,
    executors: Mapping[str, str],
    default_family: str | None,
) -> str | None:
    """The ``provider:model`` spec a step runs on, or None (``plan-model-unroutable``)."""
    if model is not None and ":" in model:
        return model
    chosen = family
    if chosen is None and model is not None:
        chosen = canonical_family(model) or model
    if chosen is None:
        chosen = default_family
    if chosen is None:
        return None
    # An empty spec (``--executor claude=``) unsets one from ponder.toml: unroutable.
    return executors.get(chosen) or executors.get(canonical_family(chosen) or "") or None


def step_family(model: str | None, spec: str, family: str | None) -> str:
    """A step's family: its explicit ``family``; else the family name it was given as its model
    (``opus`` is claude whichever executor runs it); else the family its spec names, or the
    spec's provider part."""
    if family is not None:
        return family
    if model is not None and ":" not in model:
        return canonical_family(model) or model
    provider, _, name = spec.partition(":")
    return canonical_family(name) or canonical_family(provider) or provider


_TYPES: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def check_value(value: Any, schema: Mapping[str, Any], where: str = "value") -> str | None:
    """The first way ``value`` breaks a pause's JSON Schema (type, properties, required, items,
    enum, pattern), or None."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if kinds and not any(_TYPES[k](value) for k in kinds if k in _TYPES):
        return f"{where} must be {' or '.join(kinds)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {schema['enum']}"
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and isinstance(value, str) and re.search(pattern, value) is None:
        return f"{where} must match {pattern}"
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                return f"{where}.{name} is required"
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                problem = check_value(value[name], sub, f"{where}.{name}")
                if problem is not None:
                    return problem
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problem = check_value(item, schema["items"], f"{where}[{i}]")
            if problem is not None:
                return problem
    return None
