"""Sub-flows (docs/plans.md, "Sub-flows and nested budgets"): scoped ids, ``with`` inputs and a
flow's output.

Pure. A ``run`` step walks the body of ``flows[NAME]`` inline, in the same run; a child's id is
scoped ``<run step>/<child>`` (step ids never contain ``/``) everywhere a run names it: the
trace, invocation ids, ``status``, the ledgers, ``x-sim`` counting. Inside the body, references
resolve in the flow: ``${input.x}`` is the ``with`` value ``x``, ``${steps.<child>.output}`` a
child's output. ``with`` values are templates over the caller's scope: a string that is exactly
one ``${...}`` passes the value typed, any other string is rendered text, and lists and mappings
are rendered item by item. The flow's ``input`` contract types them; a string given for a field
of another type is read as JSON (fences stripped), as a reference's path would read it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflows.plan.boundaries import Reservation
from workflows.plan.contracts import check_record, parse_type
from workflows.plan.errors import PlanError, join_path
from workflows.plan.model import AgentStep, Flow, FlowHeader, GateStep, Plan, RunStep
from workflows.plan.refs import Ref, RefError, extract_json, render, resolve, whole_reference

__all__ = [
    "MAX_WITH_DEPTH",
    "SCOPE_SEP",
    "FlowSignature",
    "check_with",
    "flow_output",
    "input_fields",
    "invocations",
    "output_ref",
    "render_with",
    "scoped",
    "step_ids",
    "with_depth_errors",
]

SCOPE_SEP = "/"
MAX_WITH_DEPTH = 32


def scoped(prefix: str | None, step_id: str) -> str:
    """``<run step>/<child>`` inside a body, the id itself at the top level."""
    return step_id if prefix is None else f"{prefix}{SCOPE_SEP}{step_id}"


@dataclass(frozen=True)
class FlowSignature:
    """What the caller's rules need to know of a flow: its ``with`` contract (field -> type;
    None: any keys) and, when every child parsed, its worst single child boundary."""

    fields: Mapping[str, str] | None
    worst: Reservation | None = None
    """The most invocations and the most wall clock any one child boundary reserves."""
    worst_step: str | None = None
    size: int = 0
    """The body's steps: each run step that calls the flow adds them to the walk."""


def input_fields(
    flow: FlowHeader | None, contracts: Mapping[str, Mapping[str, str]]
) -> Mapping[str, str] | None:
    """The flow's ``input`` contract as field -> type (None: no contract, any ``with``)."""
    spec = flow.input if flow is not None else None
    if spec is None:
        return None
    if isinstance(spec, str):
        return contracts.get(spec, {})
    return spec


def _render_value(
    value: Any, inputs: Mapping[str, Any], outputs: Mapping[str, Any], depth: int = 0
) -> Any:
    if depth > MAX_WITH_DEPTH:
        raise RefError(f"a with value is nested deeper than {MAX_WITH_DEPTH}")
    if isinstance(value, str):
        ref = whole_reference(value)
        if ref is not None:
            return resolve(ref, inputs=inputs, outputs=outputs)
        return render(value, inputs=inputs, outputs=outputs)
    if isinstance(value, list):
        return [_render_value(v, inputs, outputs, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _render_value(v, inputs, outputs, depth + 1) for k, v in value.items()}
    return value


def _depth(value: Any) -> int:
    """How deep the deepest item of ``value`` sits (a scalar or an empty list: 0; ``[1]``: 1),
    counted as ``_render_value`` counts it. Iterative: the count itself costs no stack."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_WITH_DEPTH:
            break  # deep enough to refuse: the rest changes nothing
        if isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
        elif isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
    return deepest


def with_depth_errors(steps: Sequence[Any]) -> list[PlanError]:
    """``flow.with_too_deep``: a run step's ``with`` value nested past what rendering takes,
    refused here rather than when the run reaches the step."""
    errors: list[PlanError] = []
    for i, step in enumerate(steps):
        if not isinstance(step, RunStep):
            continue
        for key, value in step.with_.items():
            if _depth(value) > MAX_WITH_DEPTH:
                errors.append(
                    PlanError(
                        "flow.with_too_deep",
                        join_path(f"steps[{i}]", "with", key),
                        f"with.{key} is nested more than {MAX_WITH_DEPTH} lists or mappings "
                        "deep; fix: flatten it, or pass it as one ${...} reference",
                    )
                )
    return errors


def render_with(
    with_: Mapping[str, Any],
    *,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    fields: Mapping[str, str] | None,
    contracts: Mapping[str, Mapping[str, str]],
) -> dict[str, Any]:
    """The ``with`` values rendered over the caller's scope; raises RefError."""
    values: dict[str, Any] = {}
    for key, raw in with_.items():
        value = _render_value(raw, inputs, outputs)
        expr = (fields or {}).get(key)
        if isinstance(value, str) and expr is not None:
            base = parse_type(expr, contracts)
            if base.base not in ("string", "any") or base.list_depth:
                try:
                    value = extract_json(value)
                except ValueError as exc:
                    raise RefError(
                        f"with.{key}: the flow's input declares {expr} and the value is text "
                        f"that is not JSON ({exc})"
                    ) from None
        values[key] = value
    return values


def check_with(
    values: Mapping[str, Any],
    fields: Mapping[str, str] | None,
    contracts: Mapping[str, Mapping[str, str]],
) -> str | None:
    """Why rendered ``with`` values do not meet the flow's input contract, or None."""
    if fields is None:
        return None
    extra = sorted(set(values) - set(fields))
    if extra:
        return f"with.{extra[0]}: the flow's input contract has no field {extra[0]!r}"
    return check_record(dict(values), fields, contracts)


def output_ref(flow: Flow) -> Ref | None:
    """The flow's declared output reference (None: the last settled child's output)."""
    return whole_reference(flow.output) if flow.output is not None else None


def flow_output(flow: Flow, *, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> Any:
    """The settled body's output; raises RefError when it names what the body did not make."""
    ref = output_ref(flow)
    if ref is not None:
        return resolve(ref, inputs=inputs, outputs=outputs)
    for step in reversed(flow.steps):
        if step.id in outputs:
            return outputs[step.id]
    raise RefError("the body settled no step, so it has no output")


def invocations(plan: Plan) -> Iterator[tuple[str, AgentStep | GateStep]]:
    """Every step that may dispatch a model call, with its scoped id: the top level's agent
    steps and model gates, then each ``run`` step's children (a flow called twice has two
    sets of children)."""
    for step in plan.steps:
        if isinstance(step, AgentStep) or (isinstance(step, GateStep) and not step.is_human()):
            yield step.id, step
    for step in plan.steps:
        if isinstance(step, RunStep) and step.flow in plan.flows:
            for child in plan.flows[step.flow].steps:
                # a set child and a human gate dispatch nothing
                if isinstance(child, AgentStep) or (
                    isinstance(child, GateStep) and not child.is_human()
                ):
                    yield scoped(step.id, child.id), child


def step_ids(plan: Plan) -> list[str]:
    """Every id a run's ``status`` shows, in plan order: each step, and after a ``run`` step its
    children, scoped."""
    out: list[str] = []
    for step in plan.steps:
        out.append(step.id)
        if isinstance(step, RunStep) and step.flow in plan.flows:
            out += [scoped(step.id, child.id) for child in plan.flows[step.flow].steps]
    return out
