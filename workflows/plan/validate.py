"""Read and validate a plan document (``ponder-plan/1`` or ``loop-plan/1``, JSON or YAML).

Pure apart from parsing text (PyYAML's safe loader; YAML is parsed here, outside workflow code).
Validation runs in passes and reports every error it finds, each with a stable code, a path and
a message naming the rule and the fix:

1. text -> JSON value: syntax, duplicate keys, NaN/infinities, non-JSON YAML values;
2. form: ``schema`` picks the form; a ``loop-plan/1`` document is mapped first;
3. shape: closed-world keys per step kind (part-2 kinds and fields: ``feature.not_available``),
   then the pydantic model, the header and each step on their own, so one bad step does not
   hide the others;
4. rules (``workflows.plan.rules``) over every step that parsed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from workflows.plan.errors import PlanError, PlanInvalid, format_path, join_path
from workflows.plan.loop_plan import map_loop_plan, translate
from workflows.plan.model import (
    MAX_STEPS,
    STEP_KINDS,
    STEP_MODELS,
    Plan,
    PlanHeader,
)
from workflows.plan.rules import budget_errors, check_steps

__all__ = [
    "FORMS",
    "MAX_DOCUMENT_CHARS",
    "PART2_FIELDS",
    "PART2_KINDS",
    "Validation",
    "load_plan",
    "parse_text",
    "validate_document",
    "validate_text",
]

FORMS = ("ponder-plan/1", "loop-plan/1")
MAX_DOCUMENT_CHARS = 8 * 1024 * 1024
MAX_NODES = 1_000_000
_STEP_PATH = re.compile(r"^steps\[(\d+)\]")
PART2_KINDS = {"set": "computed values (set)", "run": "sub-flows (run)"}
PART2_FIELDS = {
    "ensure": "ensure[] predicates",
    "iterate": "iterate{max, until}",
    "with": "sub-flow inputs (with)",
    "flow": "sub-flows (run)",
    "set": "computed values (set)",
}
PART2_TOP = {"flows": "sub-flows", "checkpoints": "checkpoints"}
# Nested part-2 fields: (container field, key) -> what it is.
PART2_NESTED = {
    ("fanout", "isolation"): "fan-out isolation (worktree)",
    ("gate", "deadline"): "human-gate deadlines",
    ("gate", "default"): "human-gate default decisions",
    ("gate", "escalate"): "human-gate escalation hooks",
    ("budget", "tokens"): "step budgets over tokens",
    ("budget", "usd"): "step budgets over usd",
    ("budget", "ms"): "step budgets over ms",
    ("budget", "wall_ms"): "step budgets over ms",
}
_FIX = {
    "field.missing": "add it",
    "field.unknown": "remove it (only x-* keys are free-form, on the plan and on steps)",
    "field.type": "give a value of the type named",
    "field.range": "stay within the bound named",
    "field.pattern": "match the pattern named",
    "field.choice": "use one of the values named",
    "value.not_finite": "use a finite number",
    "field.invalid": "correct the value",
}


@dataclass
class Validation:
    form: str | None
    plan: Plan | None
    errors: list[PlanError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors


# -- text -> JSON value -------------------------------------------------------------------------


class _Dups(dict[str, Any]):
    """A mapping that remembers the keys its source repeated."""

    dups: list[str]


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _Dups()
    out.dups = []
    for key, value in pairs:
        if key in out:
            out.dups.append(key)
        out[key] = value
    return out


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
    try:
        if as_json:
            raw = json.loads(text, object_pairs_hook=_json_pairs, parse_constant=_NonFinite)
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


# -- shape -------------------------------------------------------------------------------------


def _fields(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


_STEP_FIELDS = {kind: _fields(model) for kind, model in STEP_MODELS.items()}
_ALL_STEP_FIELDS = set().union(*_STEP_FIELDS.values())
_TOP_FIELDS = _fields(Plan) - {"loop_plan"}


def _code_of(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", ""))
    if kind == "missing":
        return "field.missing"
    if kind == "extra_forbidden":
        return "field.unknown"
    if kind == "finite_number":
        return "value.not_finite"
    if kind in ("literal_error", "enum", "union_tag_invalid"):
        return "field.choice"
    if kind == "string_pattern_mismatch":
        return "field.pattern"
    if kind.startswith(("greater_than", "less_than", "too_", "string_too_")) or kind in (
        "multiple_of",
    ):
        return "field.range"
    if kind.endswith(("_type", "_parsing")) or kind in ("model_attributes_type",):
        return "field.type"
    if kind == "value_error" and "unknown field" in str(error.get("msg", "")):
        return "field.unknown"
    return "field.invalid"


_TAG_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
    "dict": dict,
    "list": list,
}


def _doc_loc(doc: Any, loc: tuple[str | int, ...]) -> tuple[list[str | int], bool]:
    """Pydantic's loc without union branch tags (``list[...]``, ``str``): the parts that name a
    key or index of the document, plus a final missing key. The flag is False for an error from
    a union branch the value's type does not take (a list is not "not a valid string")."""
    out: list[str | int] = []
    node = doc
    relevant = True
    for n, part in enumerate(loc):
        present = (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        )
        if present:
            node = node[part]
            out.append(part)
        elif isinstance(node, dict) and isinstance(part, str) and n == len(loc) - 1:
            out.append(part)  # a missing field
        elif isinstance(part, str):
            expected = _TAG_TYPES.get(part.split("[", 1)[0])
            if expected is not None and not isinstance(node, expected):
                relevant = False
    return out, relevant


def _pydantic_errors(exc: ValidationError, base: str, doc: Any) -> list[PlanError]:
    out = []
    for error in exc.errors(include_url=False):
        loc, relevant = _doc_loc(doc, tuple(p for p in error["loc"] if isinstance(p, str | int)))
        if not relevant:
            continue
        code = _code_of(error)
        shown = error.get("input")
        given = "" if code in ("field.missing", "field.unknown") else f" (got {_short(shown)})"
        out.append(
            PlanError(code, join_path(base, *loc), f"{error['msg']}{given}; fix: {_FIX[code]}")
        )
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _prune(
    doc: dict[str, Any],
    allowed: Iterable[str],
    where: str,
    errors: list[PlanError],
    *,
    kind: str | None = None,
) -> dict[str, Any]:
    """Drop (and report) keys that are not allowed, so pydantic reports only the rest."""
    allowed = allowed if isinstance(allowed, set) else set(allowed)
    kept: dict[str, Any] = {}
    for key, value in doc.items():
        if key in allowed or key.startswith("x-"):
            kept[key] = value
            continue
        path = join_path(where, key)
        if kind is not None and key in PART2_FIELDS:
            errors.append(
                PlanError(
                    "feature.not_available",
                    path,
                    f"{key!r} ({PART2_FIELDS[key]}) is a part-2 plan feature this version does "
                    "not run; fix: remove it",
                )
            )
        elif kind is not None and key in _ALL_STEP_FIELDS:
            owners = sorted(k for k, fields in _STEP_FIELDS.items() if key in fields)
            errors.append(
                PlanError(
                    "step.field_not_for_kind",
                    path,
                    f"{key!r} belongs to {'/'.join(owners)} steps, not {kind}; "
                    "fix: remove it or change the kind",
                )
            )
        elif kind is None and key in PART2_TOP:
            errors.append(
                PlanError(
                    "feature.not_available",
                    path,
                    f"{key!r} ({PART2_TOP[key]}) is a part-2 plan feature this version does not "
                    "run; fix: remove it",
                )
            )
        else:
            known = ", ".join(sorted(allowed))
            errors.append(
                PlanError(
                    "field.unknown",
                    path,
                    f"{key!r} is not a field here (fields: {known}; x-* keys are free-form); "
                    "fix: remove it or correct its spelling",
                )
            )
    for (container, key), what in PART2_NESTED.items():
        nested = kept.get(container)
        if kind is not None and isinstance(nested, dict) and key in nested:
            nested = dict(nested)
            del nested[key]
            kept[container] = nested
            errors.append(
                PlanError(
                    "feature.not_available",
                    join_path(where, container, key),
                    f"{container}.{key} ({what}) is a part-2 plan feature this version does not "
                    "run; fix: remove it",
                )
            )
    return kept


def _step(raw: Any, i: int, errors: list[PlanError]) -> tuple[Any, str | None]:
    where = f"steps[{i}]"
    if not isinstance(raw, dict):
        errors.append(
            PlanError(
                "document.not_object",
                where,
                "a step must be a mapping; fix: write {id: ..., kind: ...}",
            )
        )
        return None, None
    step_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    kind = raw.get("kind")
    if kind is None:
        errors.append(
            PlanError(
                "field.missing",
                join_path(where, "kind"),
                f"kind is required; fix: one of {', '.join(STEP_KINDS)}",
            )
        )
        return None, step_id
    if isinstance(kind, str) and kind in PART2_KINDS:
        errors.append(
            PlanError(
                "feature.not_available",
                join_path(where, "kind"),
                f"kind {kind!r} ({PART2_KINDS[kind]}) is a part-2 plan feature this version does "
                f"not run; fix: use one of {', '.join(STEP_KINDS)}",
            )
        )
        return None, step_id
    if not isinstance(kind, str) or kind not in STEP_MODELS:
        errors.append(
            PlanError(
                "step.kind_unknown",
                join_path(where, "kind"),
                f"kind {_short(kind)} is not a step kind; fix: one of {', '.join(STEP_KINDS)}",
            )
        )
        return None, step_id
    doc = _prune(raw, _STEP_FIELDS[kind], where, errors, kind=kind)
    fanout = doc.get("fanout")
    if (
        kind == "fanout"
        and isinstance(fanout, dict)
        and "over" in fanout
        and not isinstance(fanout["over"], list | str)
    ):
        errors.append(
            PlanError(
                "fanout.over",
                join_path(where, "fanout", "over"),
                f"over must be a list or one ${{...}} reference, got {_short(fanout['over'])}; "
                "fix: give a list of items or ${steps.<id>.output}",
            )
        )
        doc["fanout"] = {**fanout, "over": []}
    try:
        step = STEP_MODELS[kind].model_validate(doc)
    except ValidationError as exc:
        errors += _pydantic_errors(exc, where, doc)
        return None, step_id
    # Returned even when keys were pruned: the rest is valid, so the rules still check it.
    return step, step_id


def _validate_ponder(doc: dict[str, Any], *, from_loop: bool) -> Validation:
    errors: list[PlanError] = []
    allowed = _TOP_FIELDS | ({"loop_plan"} if from_loop else set())
    top = _prune(doc, allowed, "", errors)
    header_doc = {k: v for k, v in top.items() if k != "steps"}
    header: PlanHeader | None = None
    try:
        header = PlanHeader.model_validate(header_doc)
    except ValidationError as exc:
        errors += _pydantic_errors(exc, "", header_doc)
    raw_steps = top.get("steps")
    steps: list[Any] = []
    ids: list[str | None] = []
    if "steps" not in top:
        errors.append(PlanError("field.missing", "steps", "steps is required; fix: add a list"))
    elif not isinstance(raw_steps, list):
        errors.append(
            PlanError("field.type", "steps", "steps must be a list of steps; fix: steps: [...]")
        )
    elif not raw_steps or len(raw_steps) > MAX_STEPS:
        errors.append(
            PlanError(
                "field.range",
                "steps",
                f"a plan has 1 to {MAX_STEPS} steps (got {len(raw_steps)}); fix: adjust it",
            )
        )
    else:
        for i, raw in enumerate(raw_steps):
            step, step_id = _step(raw, i, errors)
            steps.append(step)
            ids.append(step_id)
    contracts = header.contracts if header is not None else {}
    max_rounds = header.max_rounds if header is not None else None
    if steps:
        errors += check_steps(steps, ids, contracts=contracts, max_rounds=max_rounds)
    if errors:
        return Validation("ponder-plan/1", None, errors)
    try:
        plan = Plan.model_validate(top)
    except ValidationError as exc:  # the passes above should have caught it: still report
        return Validation("ponder-plan/1", None, _pydantic_errors(exc, "", top))
    over_budget = budget_errors(plan)
    return Validation("ponder-plan/1", None if over_budget else plan, over_budget)


def _ordered(errors: list[PlanError]) -> list[PlanError]:
    """Plan-level errors first, then by step index; discovery order within each (stable)."""

    def key(error: PlanError) -> tuple[int, int]:
        match = _STEP_PATH.match(error.path)
        return (1, int(match.group(1))) if match else (0, 0)

    return sorted(errors, key=key)


def validate_document(raw: Any) -> Validation:
    """Validate a parsed document (a JSON value); never raises for bad input."""
    result = _validate_document(raw)
    result.errors = _ordered(result.errors)
    return result


def _validate_document(raw: Any) -> Validation:
    if not isinstance(raw, dict):
        return Validation(
            None,
            None,
            [
                PlanError(
                    "document.not_object",
                    "",
                    "a plan is a mapping; fix: start with schema: ponder-plan/1",
                )
            ],
        )
    form = raw.get("schema")
    if form not in FORMS:
        return Validation(
            None,
            None,
            [
                PlanError(
                    "schema.unknown",
                    "schema",
                    f"schema {_short(form)} is not a plan form; fix: schema: ponder-plan/1 "
                    "(or loop-plan/1 for the reference's form)",
                )
            ],
        )
    if form == "ponder-plan/1":
        return _validate_ponder(raw, from_loop=False)
    mapping = map_loop_plan(raw)
    result = _validate_ponder(mapping.doc, from_loop=True)
    errors = mapping.errors + [
        PlanError(e.code, translate(e.path, mapping.paths), e.message) for e in result.errors
    ]
    return Validation("loop-plan/1", None if errors else result.plan, errors)


def validate_text(text: str, *, filename: str | None = None) -> Validation:
    raw, errors = parse_text(text, filename=filename)
    if not errors:
        return validate_document(raw)
    if not isinstance(raw, dict):
        return Validation(None, None, errors)
    # Keep going on the cleaned document (bad values are null there) so the author sees every
    # problem, but drop what a nulled value causes again at or under a path already reported.
    result = validate_document(raw)
    seen = [e.path for e in errors]
    more = [e for e in result.errors if not any(_under(e.path, p) for p in seen)]
    return Validation(result.form, None, _ordered(errors + more))


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def load_plan(source: str | Mapping[str, Any], *, filename: str | None = None) -> Plan:
    """A validated plan from text or a parsed document; raises ``PlanInvalid`` with every error."""
    result = (
        validate_text(source, filename=filename)
        if isinstance(source, str)
        else validate_document(dict(source))
    )
    if result.plan is None or result.errors:
        raise PlanInvalid(result.errors)
    return result.plan
