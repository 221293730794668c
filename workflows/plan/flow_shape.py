"""The shape pass of a plan's ``flows``: each flow's header, then each body step on its own.

Pure. A body takes agent steps, gates (model or human) and set steps only (``flow.step_kind``:
pauses stay top-level and a ``run`` step cannot call a flow from a flow, so there is no
recursion); every body
step is parsed as a top-level step is (``shape.parse_step``, paths ``flows.NAME.steps[i]``), then
the body is checked under part 1's rules (``rules.check_body``). The result is each flow's
signature, which the ``run`` steps that call it are checked against.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from workflows.plan.errors import PlanError, join_path
from workflows.plan.flows import FlowSignature
from workflows.plan.model import (
    FLOW_NAME_PATTERN,
    FLOW_STEP_KINDS,
    MAX_FLOW_STEPS,
    MAX_FLOWS,
    STEP_MODELS,
    FlowHeader,
)
from workflows.plan.rules import check_body
from workflows.plan.shape import PART2_KINDS, parse_step, prune, pydantic_errors, short

__all__ = ["FLOW_FIELDS", "parse_flows"]

_NAME = re.compile(FLOW_NAME_PATTERN)
FLOW_FIELDS = {"description", "input", "steps", "output"}


def _kind_problem(raw: Any) -> str | None:
    """Why a body step's kind is not allowed in a flow (None: let parse_step judge it)."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind in FLOW_STEP_KINDS:
        return None
    if kind in STEP_MODELS or kind in PART2_KINDS:
        return f"a {kind} step cannot run inside a flow"
    return None


def parse_flows(
    raw: Any,
    errors: list[PlanError],
    *,
    contracts: Mapping[str, Mapping[str, str]],
    max_rounds: int | None,
) -> dict[str, FlowSignature]:
    """Every flow's signature; the problems found go to ``errors``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        errors.append(
            PlanError(
                "field.type",
                "flows",
                f"flows must map names to flows (got {short(raw)}); fix: flows: {{NAME: {{steps: "
                "[...]}}",
            )
        )
        return {}
    if len(raw) > MAX_FLOWS:
        errors.append(
            PlanError(
                "field.range",
                "flows",
                f"a plan has at most {MAX_FLOWS} flows (got {len(raw)}); fix: merge some",
            )
        )
        return {}
    signatures: dict[str, FlowSignature] = {}
    for name, doc in raw.items():
        base = join_path("flows", name)
        if not _NAME.match(name):
            errors.append(
                PlanError(
                    "field.pattern",
                    base,
                    f"flow name {name!r} must match {FLOW_NAME_PATTERN}; fix: e.g. review-draft",
                )
            )
            continue
        if not isinstance(doc, dict):
            errors.append(
                PlanError(
                    "document.not_object",
                    base,
                    "a flow is a mapping; fix: write {steps: [...], input?: ..., output?: ...}",
                )
            )
            continue
        signatures[name] = _parse_flow(name, base, doc, errors, contracts, max_rounds)
    return signatures


def _parse_flow(
    name: str,
    base: str,
    doc: dict[str, Any],
    errors: list[PlanError],
    contracts: Mapping[str, Mapping[str, str]],
    max_rounds: int | None,
) -> FlowSignature:
    kept = prune(doc, FLOW_FIELDS, base, errors)
    header_doc = {k: v for k, v in kept.items() if k != "steps"}
    header: FlowHeader | None = None
    try:
        header = FlowHeader.model_validate(header_doc)
    except ValidationError as exc:
        errors.extend(pydantic_errors(exc, base, header_doc))
    raw_steps = kept.get("steps")
    if not isinstance(raw_steps, list) or not 1 <= len(raw_steps) <= MAX_FLOW_STEPS:
        errors.append(
            PlanError(
                "field.missing" if raw_steps is None else "field.range",
                join_path(base, "steps"),
                f"a flow has a list of 1 to {MAX_FLOW_STEPS} steps; fix: steps: [...]",
            )
        )
        return FlowSignature(None)
    steps: list[Any] = []
    ids: list[str | None] = []
    for i, raw_step in enumerate(raw_steps):
        problem = _kind_problem(raw_step)
        if problem is not None:
            assert isinstance(raw_step, dict)
            errors.append(
                PlanError(
                    "flow.step_kind",
                    join_path(base, "steps", i, "kind"),
                    f"{problem}; fix: a flow body takes agent, gate and set "
                    "steps: put the rest at the top level",
                )
            )
            steps.append(None)
            step_id = raw_step.get("id")
            ids.append(step_id if isinstance(step_id, str) else None)
            continue
        step, step_id = parse_step(raw_step, i, errors, base=base)
        steps.append(step)
        ids.append(step_id)
    more, signature = check_body(
        name, header, steps, ids, contracts=contracts, max_rounds=max_rounds
    )
    errors.extend(more)
    return signature
