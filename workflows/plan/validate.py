"""Read and validate a plan document (``ponder-plan/1``, ``loop-plan/1`` or a stratum flow, JSON
or YAML).

Pure apart from parsing text (``workflows.plan.document``). Validation runs in passes and
reports every error it finds, each with a stable code, a path and a message naming the rule and
the fix:

1. text -> JSON value (``document``): syntax, duplicate keys, NaN/infinities, non-JSON values;
2. form: ``schema`` picks the form; a ``loop-plan/1`` document is mapped first (``loop_plan``),
   and so is a stratum flow (``version: 1``, no ``schema``: ``stratum``);
3. shape (``shape``): closed-world keys per step kind, then the pydantic model, the header and
   each step on their own, so one bad step does not hide the others; each flow's body the same
   way (``flow_shape``), checked under the rules inside it;
4. rules (``rules``) over every step that parsed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from workflows.plan.document import MAX_DOCUMENT_CHARS, parse_text
from workflows.plan.errors import PlanError, PlanInvalid
from workflows.plan.expression_rules import expression_budget_error
from workflows.plan.flow_shape import parse_flows
from workflows.plan.flows import with_depth_errors
from workflows.plan.limits import limit_errors
from workflows.plan.loop_plan import map_loop_plan, translate
from workflows.plan.model import MAX_STEPS, Plan, PlanHeader
from workflows.plan.note_codes import note
from workflows.plan.rules import budget_errors, check_steps
from workflows.plan.run_notes import consumer_notes, limit_notes, runs_alone_notes
from workflows.plan.shape import TOP_FIELDS, parse_step, prune, pydantic_errors, short
from workflows.plan.stratum import FORM as STRATUM_FORM
from workflows.plan.stratum import fanout_notes, is_stratum, map_stratum

__all__ = [
    "FORMS",
    "MAX_DOCUMENT_CHARS",
    "Validation",
    "load_plan",
    "parse_text",
    "validate_document",
    "validate_text",
]

FORMS = ("ponder-plan/1", "loop-plan/1")
"""The forms ``schema`` names; a stratum flow (``STRATUM_FORM``) has no ``schema``."""
_STEP_PATH = re.compile(r"^steps\[(\d+)\]")


@dataclass
class Validation:
    form: str | None
    plan: Plan | None
    errors: list[PlanError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a valid plan should know before it runs (a preflight refusal ahead, for one)."""
    translated: dict[str, Any] | None = None
    """A stratum flow's ``ponder-plan/1`` translation (what runs), valid or not."""

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors


def _validate_ponder(doc: dict[str, Any], *, from_loop: bool) -> Validation:
    errors: list[PlanError] = []
    allowed = TOP_FIELDS | ({"loop_plan"} if from_loop else set())
    top = prune(doc, allowed, "", errors)
    too_many = expression_budget_error(top)
    if too_many is not None:  # refused before a single expression is parsed
        return Validation("ponder-plan/1", None, [too_many])
    header_doc = {k: v for k, v in top.items() if k not in ("steps", "flows")}
    header: PlanHeader | None = None
    try:
        header = PlanHeader.model_validate(header_doc)
    except ValidationError as exc:
        errors += pydantic_errors(exc, "", header_doc)
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
            step, step_id = parse_step(raw, i, errors)
            steps.append(step)
            ids.append(step_id)
    contracts = header.contracts if header is not None else {}
    max_rounds = header.max_rounds if header is not None else None
    flows = parse_flows(top.get("flows"), errors, contracts=contracts, max_rounds=max_rounds)
    if steps:
        errors += check_steps(steps, ids, contracts=contracts, max_rounds=max_rounds, flows=flows)
        errors += with_depth_errors(steps)
    if errors:
        return Validation("ponder-plan/1", None, errors)
    try:
        plan = Plan.model_validate(top)
    except ValidationError as exc:  # the passes above should have caught it: still report
        return Validation("ponder-plan/1", None, pydantic_errors(exc, "", top))
    over_budget = budget_errors(plan) or limit_errors(plan)
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
    if result.ok and result.plan is not None:
        plan = result.plan
        result.notes += consumer_notes(plan) + runs_alone_notes(plan) + limit_notes(plan)
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
    if is_stratum(raw):
        return _validate_stratum(raw)
    form = raw.get("schema")
    if form not in FORMS:
        return Validation(
            None,
            None,
            [
                PlanError(
                    "schema.unknown",
                    "schema",
                    f"schema {short(form)} is not a plan form; fix: schema: ponder-plan/1 "
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
    plan = None if errors else result.plan
    notes = []
    if plan is not None and plan.loop_plan is not None and not plan.loop_plan.trace_emit:
        notes.append(
            note(
                "trace-emit-required",
                "trace.emit is not true: a run refuses this loop-plan/1 plan "
                "(trace-emit-required); fix: add trace: {emit: true}",
            )
        )
    return Validation("loop-plan/1", plan, errors, notes)


def _validate_stratum(raw: dict[str, Any]) -> Validation:
    mapping = map_stratum(raw)
    if mapping.errors and "steps" not in mapping.doc:  # no flow to translate: say only why
        return Validation(STRATUM_FORM, None, mapping.errors, translated=mapping.doc)
    result = _validate_ponder(mapping.doc, from_loop=False)
    errors = mapping.errors + [
        PlanError(e.code, translate(e.path, mapping.paths), e.message) for e in result.errors
    ]
    plan = None if errors else result.plan
    notes = fanout_notes(mapping.doc) if plan is not None else []
    return Validation(STRATUM_FORM, plan, errors, notes, translated=mapping.doc)


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
