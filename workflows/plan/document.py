"""Plan text to a JSON value: JSON or YAML, closed to what JSON can say.

Pure apart from PyYAML's safe loader (YAML is parsed here, outside workflow code). Refused, each
with its path: duplicate keys, NaN and infinities, non-string keys, YAML values JSON has no
word for (dates, sets, binary), self-referencing aliases and alias bombs. YAML is read with YAML
1.2 booleans (only true/false), so ``on:`` and ``yes:`` stay strings.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

from workflows.plan.errors import PlanError, format_path

__all__ = ["MAX_DOCUMENT_CHARS", "MAX_NODES", "parse_text"]

MAX_DOCUMENT_CHARS = 8 * 1024 * 1024
MAX_NODES = 1_000_000


class _Dups(dict[str, Any]):
    """A mapping that remembers the keys its source repeated."""

    dups: list[str]


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


class _JsonHooks:
    """json.loads hooks that note what JSON text can get wrong (repeated keys, NaN, 1e999), so
    the locating walk runs only when something was found."""

    def __init__(self) -> None:
        self.found = False

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        plain = dict(pairs)
        if len(plain) == len(pairs):
            return plain
        self.found = True
        out = _Dups()
        out.dups = []
        for key, value in pairs:
            if key in out:
                out.dups.append(key)
            out[key] = value
        return out

    def constant(self, text: str) -> _NonFinite:
        self.found = True
        return _NonFinite(text)

    def number(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            self.found = True
        return value


class _Loader(yaml.SafeLoader):
    pass


# YAML 1.2 booleans: only true/false. YAML 1.1 also reads on/off/yes/no as booleans, which
# turns `retry: {on: [timeout]}` into a key `True`; a plan author never means that.
_BOOL = "tag:yaml.org,2002:bool"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _yaml_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> Any:
    loader.flatten_mapping(node)
    out = _Dups()
    out.dups = []
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, list | dict):
            key = repr(key)  # unhashable: reported as not JSON by the walk
            out.dups.append(f"\x00{key}")
            continue
        if key in out:
            out.dups.append(key)
        out[key] = loader.construct_object(value_node, deep=True)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _yaml_mapping)


def _clean(
    value: Any,
    loc: tuple[str | int, ...],
    errors: list[PlanError],
    budget: list[int],
    active: set[int],
) -> Any:
    """A plain JSON copy of a parsed document; every problem found is reported with its path
    (built only for an error: this walk visits every value of a large plan)."""
    budget[0] -= 1
    if budget[0] < 0:
        if budget[0] == -1:
            errors.append(
                PlanError(
                    "document.too_large",
                    format_path(loc),
                    f"the document has over {MAX_NODES} values (YAML aliases expand); "
                    "fix: write a smaller plan without anchors",
                )
            )
        return None
    if isinstance(value, str | bool | int) or value is None:
        return value
    if isinstance(value, float | _NonFinite):
        if isinstance(value, float) and math.isfinite(value):
            return value
        shown = value.text if isinstance(value, _NonFinite) else repr(value)
        errors.append(
            PlanError(
                "value.not_finite",
                format_path(loc),
                f"{shown} is not a finite number; fix: use a finite one",
            )
        )
        return None
    if isinstance(value, dict | list):
        if id(value) in active:
            errors.append(
                PlanError(
                    "value.not_json",
                    format_path(loc),
                    "a YAML alias refers to itself; fix: remove it",
                )
            )
            return None
        active.add(id(value))
        try:
            if isinstance(value, list):
                return [_clean(v, (*loc, i), errors, budget, active) for i, v in enumerate(value)]
            out: dict[str, Any] = {}
            for dup in getattr(value, "dups", []):
                path = format_path(loc)
                shown = dup.lstrip("\x00")
                code = "value.not_json" if dup.startswith("\x00") else "document.duplicate_key"
                errors.append(
                    PlanError(
                        code,
                        path,
                        f"key {shown!r} in {path or '(document)'} is repeated or not a string; "
                        "fix: give each key once, as a string",
                    )
                )
            for key, item in value.items():
                if not isinstance(key, str):
                    errors.append(
                        PlanError(
                            "value.not_json",
                            format_path(loc),
                            f"key {key!r} is a {type(key).__name__}; fix: quote it",
                        )
                    )
                    key = str(key)
                out[key] = _clean(item, (*loc, key), errors, budget, active)
            return out
        finally:
            active.discard(id(value))
    errors.append(
        PlanError(
            "value.not_json",
            format_path(loc),
            f"{type(value).__name__} values are not JSON; fix: quote it as a string",
        )
    )
    return None


def parse_text(text: str, *, filename: str | None = None) -> tuple[Any, list[PlanError]]:
    """The JSON value of a plan document, or the errors that stop it being one."""
    if len(text) > MAX_DOCUMENT_CHARS:
        return None, [
            PlanError(
                "document.too_large",
                "",
                f"{len(text)} characters is over the {MAX_DOCUMENT_CHARS} limit; "
                "fix: split the plan",
            )
        ]
    name = (filename or "").lower()
    as_json = name.endswith(".json") or (
        not name.endswith((".yaml", ".yml")) and text.lstrip().startswith(("{", "["))
    )
    hooks = _JsonHooks()
    try:
        if as_json:
            raw = json.loads(
                text,
                object_pairs_hook=hooks.pairs,
                parse_constant=hooks.constant,
                parse_float=hooks.number,
            )
            if not hooks.found:
                return raw, []  # JSON has nothing else to refuse: no aliases, no odd types
        else:
            raw = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        kind = "JSON" if as_json else "YAML"
        detail = str(exc).replace("\n", " ")
        return None, [
            PlanError("document.syntax", "", f"not valid {kind}: {detail}; fix: correct the syntax")
        ]
    errors: list[PlanError] = []
    try:
        cleaned = _clean(raw, (), errors, [MAX_NODES], set())
    except RecursionError:
        return None, [PlanError("document.too_large", "", "the document nests too deeply")]
    return cleaned, errors
