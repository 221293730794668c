"""The shape pass of plan validation: closed-world keys per step kind, then the pydantic model.

Pure. Keys a step kind does not take are dropped and reported before pydantic sees the step
(part-2 kinds and fields as ``feature.not_available``, another kind's field as
``step.field_not_for_kind``), so each problem is reported once, with its own code. Pydantic's
errors are mapped to stable codes, and their paths lose union branch names (``list[...]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from workflows.plan.errors import PlanError, join_path
from workflows.plan.model import ENSURE_FORMS, STEP_KINDS, STEP_MODELS, Plan

__all__ = [
    "PART2_FIELDS",
    "PART2_KINDS",
    "TOP_FIELDS",
    "code_of",
    "parse_step",
    "prune",
    "pydantic_errors",
    "short",
]

PART2_KINDS: dict[str, str] = {}
PART2_FIELDS: dict[str, str] = {}
PART2_TOP = {"checkpoints": "checkpoints"}
# Nested part-2 fields: (container field, key) -> what it is.
PART2_NESTED: dict[tuple[str, str], str] = {}
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


def _fields(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


_STEP_FIELDS = {kind: _fields(model) for kind, model in STEP_MODELS.items()}
_ALL_STEP_FIELDS = set().union(*_STEP_FIELDS.values())
TOP_FIELDS = _fields(Plan) - {"loop_plan"}


def code_of(error: Mapping[str, Any]) -> str:
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


def pydantic_errors(exc: ValidationError, base: str, doc: Any) -> list[PlanError]:
    out = []
    for error in exc.errors(include_url=False):
        loc, relevant = _doc_loc(doc, tuple(p for p in error["loc"] if isinstance(p, str | int)))
        if not relevant:
            continue
        code = code_of(error)
        shown = error.get("input")
        given = "" if code in ("field.missing", "field.unknown") else f" (got {short(shown)})"
        out.append(
            PlanError(code, join_path(base, *loc), f"{error['msg']}{given}; fix: {_FIX[code]}")
        )
    return out


def short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def prune(
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


def _ensure_forms(entries: list[Any], where: str, errors: list[PlanError]) -> list[Any]:
    """Entries that are one ensure form each, the others reported (``ensure.form``) and
    replaced by a placeholder that holds (so the model reports only what is wrong inside a
    form, and later entries keep their indices)."""
    kept = []
    for k, entry in enumerate(entries):
        forms = [key for key in entry if key in ENSURE_FORMS] if isinstance(entry, dict) else []
        others = (
            [key for key in entry if key not in ENSURE_FORMS] if isinstance(entry, dict) else []
        )
        if len(forms) == 1 and not others:
            kept.append(entry)
            continue
        given = ", ".join(sorted(map(str, entry))) if isinstance(entry, dict) else short(entry)
        kept.append({"expr": "true"})
        errors.append(
            PlanError(
                "ensure.form",
                join_path(where, "ensure", k),
                f"an ensure entry is exactly one of {{expr: CEL}}, {{file_exists: PATH}}, "
                f"{{file_contains: {{path, text}}}}, {{judged: {{statement, model?, stakes?}}}} "
                f"(got {given or 'an empty mapping'}); fix: write one form per entry",
            )
        )
    return kept


def parse_step(
    raw: Any, i: int, errors: list[PlanError], *, base: str = ""
) -> tuple[Any, str | None]:
    """One step of ``steps`` (or of a flow's body, under ``base``): (the model or None, its id
    when readable)."""
    where = join_path(base, "steps", i)
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
                f"kind {short(kind)} is not a step kind; fix: one of {', '.join(STEP_KINDS)}",
            )
        )
        return None, step_id
    doc = prune(raw, _STEP_FIELDS[kind], where, errors, kind=kind)
    if isinstance(doc.get("ensure"), list):
        doc["ensure"] = _ensure_forms(doc["ensure"], where, errors)
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
                f"over must be a list or one ${{...}} reference, got {short(fanout['over'])}; "
                "fix: give a list of items or ${steps.<id>.output}",
            )
        )
        doc["fanout"] = {**fanout, "over": []}
    try:
        step = STEP_MODELS[kind].model_validate(doc)
    except ValidationError as exc:
        errors += pydantic_errors(exc, where, doc)
        return None, step_id
    # Returned even when keys were pruned: the rest is valid, so the rules still check it.
    return step, step_id
