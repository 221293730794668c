"""JSON Schemas that come from input (a plan pause's ``schema``): checked as schemas, bounded, and
applied to values with a linear-time regex engine and a step meter.

Pure (``jsonschema`` and ``google-re2``: no Temporal, no I/O after import), and deterministic, so
a document validator, a workflow's input decoding, an update validator and a signal handler all
apply the same rule. Values are checked by ``jsonschema``'s Draft 2020-12 validator with these
changes, each because input must not buy unbounded work on a shared worker:

- every regex (``pattern``, ``patternProperties``, the keys ``additionalProperties`` weighs, and
  ``format: regex``) runs on RE2 (``workflows/patterns.py``), never on Python's ``re``;
- ``uniqueItems`` is linear (the library falls back to comparing every pair);
- a meter counts keyword evaluations (an ``enum`` costs its length; 64 characters of error text
  cost one) and stops the check at :data:`MAX_CHECK_STEPS`: ``anyOf`` x ``items`` x a long array
  cannot multiply into minutes, and a refused value says so;
- references stay inside the schema: ``$ref`` is a local JSON pointer (``#`` or ``#/...``) that
  resolves; ``$id``, ``$anchor``, ``$dynamicRef``, ``$dynamicAnchor`` and ``$schema`` below the
  root are refused (a nested ``$schema`` would switch the library to a stock validator, a base
  URI would point a ``$ref`` outside the document), so nothing is fetched or looked up;
- ``unevaluatedProperties`` / ``unevaluatedItems`` are refused (the library re-walks the schema
  for them, with Python's ``re``); ``additionalProperties`` / ``items`` say the same thing here.

A schema is checked at validation: its size (:data:`MAX_SCHEMA_BYTES` of compact JSON,
:data:`MAX_SCHEMA_DEPTH` levels, :data:`MAX_SCHEMA_NODES` values), then the rules above, then the
Draft 2020-12 meta-schema (with RE2 as ``format: regex``, so a pattern that does not compile is
refused with the path to it). A value is at most :data:`MAX_VALUE_BYTES` of JSON.

``jsonschema`` is imported, and its checkers built, on the first schema that gets past the size
and walker checks (:func:`load`): most plans have no pause schema, and importing it was about a
tenth of ``ponder plan validate``'s time. A worker calls :func:`load` at start, so no workflow
task (nor a replay, in Temporal's sandbox) imports or builds them.
"""

from __future__ import annotations

import contextvars
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from workflows.patterns import PatternInvalid, compile_pattern, pattern_problem

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "DRAFT_2020_12",
    "MAX_CHECK_STEPS",
    "MAX_DOCUMENT_SCHEMAS_BYTES",
    "MAX_DOCUMENT_SCHEMAS_NODES",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "MAX_VALUE_BYTES",
    "SchemaProblem",
    "json_size",
    "json_values",
    "load",
    "schema_problems",
    "value_problem",
]

MAX_SCHEMA_BYTES = 16 * 1024
MAX_SCHEMA_DEPTH = 32
MAX_SCHEMA_NODES = 1_000
MAX_DOCUMENT_SCHEMAS_BYTES = 64 * 1024
MAX_DOCUMENT_SCHEMAS_NODES = 4_000
"""All the schemas of one document together (each is checked again in the workflow's input
decoding, so their checks together stay well inside a workflow task's time: ~0.2 s at most)."""
MAX_VALUE_BYTES = 64 * 1024
MAX_CHECK_STEPS = 10_000
MAX_MESSAGE_CHARS = 300
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_MESSAGE_CHARS_PER_STEP = 64

_REFUSED_KEYWORDS = {
    "$id": "a base URI would point references outside this schema",
    "$anchor": "name the subschema with a $ref JSON pointer (#/$defs/NAME) instead",
    "$dynamicRef": "dynamic references are not supported; use $ref with a JSON pointer",
    "$dynamicAnchor": "dynamic references are not supported; use $ref with a JSON pointer",
    "$recursiveRef": "use $ref with a JSON pointer",
    "$recursiveAnchor": "use $ref with a JSON pointer",
    "unevaluatedProperties": "use additionalProperties",
    "unevaluatedItems": "use items",
}
_ONE_SCHEMA = (
    "additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else",
)  # fmt: skip
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class SchemaProblem:
    """Where in the schema (a path of keys and indexes) and what is wrong, with the fix."""

    path: Path
    message: str


def json_size(value: object) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (what a size ceiling is measured in)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def json_values(value: object) -> int:
    """How many JSON values ``value`` holds, itself included."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


# -- the schema ------------------------------------------------------------------------------


def schema_problems(schema: object) -> list[SchemaProblem]:
    """Every way ``schema`` is refused, each with its path (empty: it is a usable schema).

    Cost is bounded by the size checks, which run first and stop the rest."""
    if not isinstance(schema, dict | bool):
        return [SchemaProblem((), "a JSON Schema is an object (or true/false)")]
    size = json_size(schema)
    if size > MAX_SCHEMA_BYTES:
        return [
            SchemaProblem(
                (), f"the schema is {size} bytes of JSON, over the {MAX_SCHEMA_BYTES} limit; "
                "fix: write a smaller schema",
            )
        ]  # fmt: skip
    shape = _shape_problem(schema)
    if shape is not None:
        return [shape]
    walker = _Walker(schema)
    walker.walk(schema, (), root=True)
    if not walker.problems:
        loop = _endless_reference(schema)
        if loop is not None:
            walker.problem(
                loop,
                "this $ref leads back to itself without going into the value "
                "(the check would never end); fix: break the cycle",
            )
    if walker.problems:
        return walker.problems
    return _meta_problems(_without_schema_uri(schema))


def _shape_problem(schema: object) -> SchemaProblem | None:
    nodes = 0
    stack: list[tuple[object, Path]] = [(schema, ())]
    while stack:
        value, path = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            return SchemaProblem(
                (), f"the schema has over {MAX_SCHEMA_NODES} values; fix: write a smaller schema"
            )
        if len(path) > MAX_SCHEMA_DEPTH:
            return SchemaProblem(
                path[:MAX_SCHEMA_DEPTH],
                f"the schema nests over {MAX_SCHEMA_DEPTH} levels deep; fix: flatten it",
            )
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value))
    return None


class _Walker:
    """The rules on schema positions (a ``properties`` map's keys are names, not keywords), and
    on whatever a ``$ref`` points at, each target once."""

    def __init__(self, root: object) -> None:
        self.root = root
        self.problems: list[SchemaProblem] = []
        self.seen: set[str] = set()

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(SchemaProblem(path, message))

    def walk(self, schema: object, path: Path, *, root: bool = False) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            return  # the meta-schema check reports a non-schema where a schema belongs
        for keyword, why in _REFUSED_KEYWORDS.items():
            if keyword in schema:
                self.problem((*path, keyword), f"{keyword} is not allowed here: {why}")
        if "$schema" in schema and not (root and schema["$schema"] == DRAFT_2020_12):
            where = "the root" if root else "a subschema"
            self.problem(
                (*path, "$schema"),
                f"$schema {schema['$schema']!r} in {where} is refused: pause schemas are "
                f"Draft 2020-12; fix: drop it (or give {DRAFT_2020_12} at the root)",
            )
        if "$ref" in schema:
            self.reference(schema["$ref"], (*path, "$ref"))
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            self.regex(pattern, (*path, "pattern"))
        patterns = schema.get("patternProperties")
        if isinstance(patterns, dict):
            for key in patterns:
                self.regex(key, (*path, "patternProperties", key))
        for keyword in _ONE_SCHEMA:
            if keyword in schema:
                self.walk(schema[keyword], (*path, keyword))
        for keyword in _SCHEMA_LISTS:
            items = schema.get(keyword)
            if isinstance(items, list):
                for i, item in enumerate(items):
                    self.walk(item, (*path, keyword, i))
        for keyword in _SCHEMA_MAPS:
            members = schema.get(keyword)
            if isinstance(members, dict):
                for name, item in members.items():
                    self.walk(item, (*path, keyword, name))

    def regex(self, pattern: str, path: Path) -> None:
        problem = pattern_problem(pattern)
        if problem is not None:
            self.problem(path, problem)

    def reference(self, ref: object, path: Path) -> None:
        if not isinstance(ref, str):
            return  # the meta-schema check reports it
        if ref != "#" and not ref.startswith("#/"):
            self.problem(
                path,
                f"$ref {ref!r} is not a JSON pointer into this schema: nothing is fetched or "
                "looked up; fix: use #/$defs/NAME and define it under $defs",
            )
            return
        target = _resolve_pointer(self.root, ref)
        if target is None:
            self.problem(path, f"$ref {ref!r} points at nothing in this schema")
            return
        target_path, value = target
        if ref in self.seen:
            return
        self.seen.add(ref)
        self.walk(value, target_path)


def _resolve_pointer(root: object, ref: str) -> tuple[Path, object] | None:
    """The path and value a local ``#/a/b`` pointer names (RFC 6901 escapes, URI-decoded)."""
    value = root
    path: list[str | int] = []
    for raw in ref[2:].split("/") if ref != "#" else []:
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and token in value:
            value = value[token]
            path.append(token)
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
            path.append(int(token))
        else:
            return None
    if not isinstance(value, dict | bool):
        return None
    return tuple(path), value


_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")


def _endless_reference(root: object) -> Path | None:
    """The path of a ``$ref`` on a cycle that applies schemas to the same value over and over
    (through ``$ref``, ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``,
    ``dependentSchemas``), or None: a cycle through ``properties`` or ``items`` ends with the
    value's depth."""
    done: set[Path] = set()
    active: set[Path] = set()

    def children(schema: dict[str, Any], path: Path) -> list[tuple[object, Path, Path]]:
        """(child, its path, the path that leads to it) for each same-value subschema."""
        out: list[tuple[object, Path, Path]] = []
        ref = schema.get("$ref")
        target = _resolve_pointer(root, ref) if isinstance(ref, str) else None
        if target is not None:
            out.append((target[1], target[0], (*path, "$ref")))
        out += [(schema[k], (*path, k), (*path, k)) for k in _SAME_VALUE_ONE if k in schema]
        for keyword in _SAME_VALUE_LISTS:
            items = schema.get(keyword)
            if isinstance(items, list):
                out += [(v, (*path, keyword, i), (*path, keyword, i)) for i, v in enumerate(items)]
        dependent = schema.get("dependentSchemas")
        if isinstance(dependent, dict):
            out += [(v, (*path, "dependentSchemas", k), (*path, "dependentSchemas", k))
                    for k, v in dependent.items()]  # fmt: skip
        return out

    def visit(schema: object, path: Path) -> Path | None:
        if not isinstance(schema, dict) or path in done:
            return None
        active.add(path)
        for child, child_path, via in children(schema, path):
            if child_path in active:
                return via
            found = visit(child, child_path)
            if found is not None:
                return found
        active.discard(path)
        done.add(path)
        return None

    return visit(root, ())


def _as_metered(schema: object, *, keep_false: bool = False) -> object:
    """A copy in which every ``false`` subschema is ``{"not": {}}``: the library reports a false
    subschema from outside any keyword (so outside the meter), with the value's whole ``repr``,
    once per ``anyOf`` branch; ``not`` reports it through the meter. ``additionalProperties:
    false`` stays (its check here is metered)."""
    if schema is False and not keep_false:
        return {"not": {}}
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE_SCHEMA:
            out[key] = _as_metered(value, keep_false=key == "additionalProperties")
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_as_metered(v) for v in value]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _as_metered(v) for k, v in value.items()}
        else:
            out[key] = value
    return out


def _without_schema_uri(schema: dict[str, Any] | bool) -> dict[str, Any] | bool:
    """The schema without its root ``$schema`` (already checked to be Draft 2020-12): kept, it
    would make the library pick its stock validator for the root (and Python's ``re``)."""
    # The jsonschema release in use checks a root by the validator's class whatever its
    # $schema says, so a mutant that keeps it checks values alike: a guard for other releases.
    if isinstance(schema, dict) and "$schema" in schema:  # pragma: no mutate
        return {k: v for k, v in schema.items() if k != "$schema"}
    return schema


def _re2_regex(instance: object) -> bool:
    if isinstance(instance, str):
        compile_pattern(instance)  # raises PatternInvalid, which the format check reports
    return True


def _relinked(value: Any) -> Any:
    if value == {"$dynamicRef": "#meta"}:
        return {"$ref": "#"}
    if isinstance(value, dict):
        return {k: _relinked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relinked(v) for v in value]
    return value


def _flat_meta_schema() -> dict[str, Any]:
    """The Draft 2020-12 meta-schema in one resource: its vocabularies' ``properties`` and
    ``$defs`` merged, each ``$dynamicRef: "#meta"`` a ``$ref: "#"``. For a plain schema (one that
    extends no meta-schema, as the walker ensures) that is the same check; the library resolves
    dynamic references by walking its scope at every subschema, ~12x slower (0.8 ms a subschema:
    2,000 empty ones took 1.6 s, in a workflow's input decoding)."""
    from jsonschema import Draft202012Validator
    from jsonschema_specifications import REGISTRY

    meta = Draft202012Validator.META_SCHEMA
    base = meta["$id"].rsplit("/", 1)[0]
    parts = [meta] + [REGISTRY.contents(f"{base}/{r['$ref']}") for r in meta["allOf"]]
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for part in parts:
        for into, key in ((properties, "properties"), (defs, "$defs")):
            for name, value in part.get(key, {}).items():
                assert name not in into, name  # the vocabularies name distinct keywords
                into[name] = _relinked(value)
    return {"type": ["object", "boolean"], "properties": properties, "$defs": defs}


def _meta_problems(schema: dict[str, Any] | bool) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    for error in load().meta.iter_errors(schema):
        path = tuple(error.absolute_path)
        if error.validator == "format" and isinstance(error.cause, PatternInvalid):
            message = str(error.cause)
        elif path and path[-1] == "type" and error.validator == "anyOf":
            message = f"type {error.instance!r} is not one of {', '.join(_JSON_TYPES)}"
        else:
            message = _short(error.message)
        problem = SchemaProblem(path, message)
        if problem not in problems:  # the meta-schema's dynamic references repeat an error
            problems.append(problem)
    return problems


# -- values ----------------------------------------------------------------------------------


class _TooCostly(Exception):
    pass


_METER: contextvars.ContextVar[list[int]] = contextvars.ContextVar("json_schema_meter")


def _charge(units: int) -> None:
    meter = _METER.get(None)
    if meter is None:
        return
    meter[0] -= units
    if meter[0] < 0:
        raise _TooCostly


def _metered(keyword: str, check: Any) -> Any:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        _charge(len(value) if keyword == "enum" and isinstance(value, list) else 1)
        errors = check(validator, value, instance, schema)
        for error in errors or ():
            _charge(1 + len(error.message) // _MESSAGE_CHARS_PER_STEP)
            yield error

    return run


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and compile_pattern(pattern).search(instance) is None:
        yield load().error(f"{_short(repr(instance))} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = compile_pattern(pattern)
        for key, value in instance.items():
            _charge(1)
            if compiled.search(key) is not None:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The keys neither ``properties`` nor ``patternProperties`` cover, in the instance's order
    (deterministic: a set's order changes with the process's hash seed)."""
    named = schema.get("properties", {})
    patterns = [compile_pattern(p) for p in schema.get("patternProperties", {})]
    extras = []
    for key in instance:
        _charge(1 + len(patterns))
        if key not in named and not any(p.search(key) is not None for p in patterns):
            extras.append(key)
    return extras


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(allowed, "object"):
        for key in extras:
            yield from validator.descend(instance[key], allowed, path=key)
    elif allowed is False and extras:
        shown = ", ".join(repr(k) for k in extras[:5]) + (" ..." if len(extras) > 5 else "")
        yield load().error(f"additional properties are not allowed ({shown})")


def _canonical(value: Any) -> Any:
    """A hashable form under JSON Schema equality (1 == 1.0, true != 1, keys unordered)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _canonical(v)) for k, v in value.items()))
    return ("null", None)


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    _charge(len(instance))
    seen: set[Any] = set()
    for i, item in enumerate(instance):
        key = _canonical(item)
        if key in seen:
            yield load().error(f"item {i} repeats an earlier item (uniqueItems)")
            return
        seen.add(key)


_OVERRIDES = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


@dataclass(frozen=True)
class _Checkers:
    """What this module builds on ``jsonschema`` (see :func:`load`)."""

    formats: Any
    """Only ``format: regex`` is asserted (on RE2); other formats are annotations, as Draft
    2020-12 says by default."""
    meta: Validator
    """The flat Draft 2020-12 meta-schema's checker."""
    values: Callable[..., Validator]
    """Draft 2020-12 with the overrides above, each keyword metered."""
    no_remote: Any
    """No retrieval: a reference the walker let through is local, and nothing else resolves."""
    error: type[ValidationError]
    best_match: Callable[..., ValidationError | None]


@functools.cache
def load() -> _Checkers:
    """Import ``jsonschema`` and build the checkers, once (the first schema check does it; a
    worker calls this at start so that no workflow task does)."""
    import jsonschema
    import referencing
    from jsonschema.exceptions import ValidationError, best_match

    draft = jsonschema.Draft202012Validator
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("regex", raises=PatternInvalid)(_re2_regex)
    return _Checkers(
        formats=formats,
        meta=draft(_flat_meta_schema(), format_checker=formats),
        values=jsonschema.validators.extend(
            draft,
            validators={
                keyword: _metered(keyword, _OVERRIDES.get(keyword, check))
                for keyword, check in draft.VALIDATORS.items()
            },
        ),
        no_remote=referencing.Registry(),
        error=ValidationError,
        best_match=best_match,
    )


def value_problem(value: Any, schema: dict[str, Any] | bool, where: str = "value") -> str | None:
    """The first way ``value`` breaks ``schema`` (one :func:`schema_problems` accepted), named
    from ``where``, or None. Never raises; bounded by the meter."""
    size = json_size(value)
    if size > MAX_VALUE_BYTES:
        return f"{where} is {size} bytes of JSON, over the {MAX_VALUE_BYTES} limit"
    checkers = load()
    token = _METER.set([MAX_CHECK_STEPS])
    try:
        validator = checkers.values(
            _as_metered(_without_schema_uri(schema)),
            registry=checkers.no_remote,
            format_checker=checkers.formats,
        )
        error = checkers.best_match(validator.iter_errors(value))
    except _TooCostly:
        return (
            f"{where} is too costly to check against this schema (over {MAX_CHECK_STEPS} "
            "steps); fix: give a smaller value, or simplify the schema"
        )
    except RecursionError:
        return f"{where} cannot be checked: the schema refers to itself without end"
    except Exception as exc:  # never raise: in a signal handler it would fail the task forever
        return f"{where} cannot be checked: the schema is unusable ({_short(str(exc))})"
    finally:
        _METER.reset(token)
    return None if error is None else _describe(error, where)


def _describe(error: ValidationError, where: str) -> str:
    loc = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    kind = error.validator
    if kind == "format" and isinstance(error.cause, PatternInvalid):
        return f"{loc}: {error.cause}"
    if kind == "type":
        kinds = error.validator_value
        shown = " or ".join(kinds) if isinstance(kinds, list) else str(kinds)
        return f"{loc} must be {shown}"
    if kind == "pattern":
        return f"{loc} must match {error.validator_value}"
    if kind == "enum":
        return _short(f"{loc} must be one of {json.dumps(error.validator_value)}")
    if kind == "required":
        missing = next(
            (n for n in error.validator_value if isinstance(error.instance, dict)
             and n not in error.instance), None,
        )  # fmt: skip
        if missing is not None:
            return f"{loc}.{missing} is required"
    return _short(f"{loc}: {error.message}")


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."
