"""Route activation: which boundary of a scope runs, is skipped, or is stranded.

Pure. The walk goes through a scope's boundaries in plan order, but the order does not decide
what runs; routes and deps do:

- a *route target* -- a later step named by an ``on_fail``, or by a human gate's
  ``on_approve`` / ``on_kill`` -- runs only when its route was taken (the walk *arms* it);
  untaken, it is skipped;
- a human gate that was killed does not continue: a step that depends on it is skipped, unless
  it is the target the kill routed to;
- a step whose ``when`` is false is skipped (the walk evaluates it once the rules here say
  the step may run). That skip is *local*: a dep skipped by its own ``when`` is met, so a
  join after a conditional step still runs (what it reads of the skipped step's output fails
  when its prompt is rendered, as any reference to an output that does not exist);
- a step that depends on a step skipped any other way is skipped too (it was reached only
  through a route not taken, or behind a killed gate);
- a step that depends on a failed step (a failure routed away by ``on_fail``) or on a stranded
  one can never run: it is *stranded*. When the walk ends with stranded steps the run does not
  complete: it fails ``steps-stranded`` naming them.

A step's deps on the step that routed to it are met by the route itself (an ``on_fail`` target
may depend on the step whose failure it handles; an ``on_kill`` target on its gate).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from workflows.plan.boundaries import AnyStep
from workflows.plan.expression_rules import step_expressions
from workflows.plan.expressions import analyse
from workflows.plan.model import (
    AgentStep,
    EnsureFileContains,
    EnsureFileExists,
    Flow,
    GateStep,
    Plan,
    RunStep,
    SetStep,
    TournamentStep,
)
from workflows.plan.refs import Ref, RefError, parse_template

__all__ = [
    "KILL",
    "Verdict",
    "forward_routers",
    "gate_route_targets",
    "has_conditions",
    "has_routes",
    "overlaps",
    "reads",
    "redo_target",
    "redo_waits",
    "stranded_detail",
    "verdict",
    "with_strings",
]

KILL = "kill"
"""A human gate's output once killed (its decision)."""


@dataclass(frozen=True)
class Verdict:
    action: Literal["run", "skip", "strand"]
    because: str | None = None
    """The dep (or route) that decided a skip or a strand."""
    local: bool = False
    """A skip by the step's own ``when``: what depends on it still runs."""


def _routes(step: AnyStep) -> list[str]:
    """The step ids ``step`` may route to (``on_fail``; a human gate's approve and kill)."""
    if isinstance(step, AgentStep | RunStep) and step.on_fail is not None:
        return [step.on_fail]
    if isinstance(step, GateStep) and step.gate is not None:
        return [t for t in (step.gate.on_approve, step.gate.on_kill) if t is not None]
    return []


def has_routes(plan: Plan) -> bool:
    """Whether any scope of the plan routes (where activation and a plan-order walk differ)."""
    scopes: list[Sequence[AnyStep]] = [plan.steps, *(f.steps for f in plan.flows.values())]
    return any(_routes(step) for steps in scopes for step in steps)


def has_conditions(plan: Plan) -> bool:
    """Whether any step of the plan (a flow body's included) has a ``when``: a false one
    skips it as an untaken route would, which only activation knows how to carry."""
    scopes: list[Sequence[AnyStep]] = [plan.steps, *(f.steps for f in plan.flows.values())]
    return any(getattr(step, "when", None) is not None for steps in scopes for step in steps)


def overlaps(
    step: AnyStep, *, flows: Mapping[str, Flow] | None = None, judged: bool = False
) -> bool:
    """Whether ``step`` may run beside others when the plan allows concurrency: an engine
    agent step or a set step without a checkpoint, given the plan's ``flows`` (once
    sub-flows may overlap) a ``run`` step whose body dispatches no consumer step (its
    children reserve one at a time beside what else is in flight), and once ``judged`` steps
    may overlap a model gate and a tournament step (each reserves its worst case: the gate's
    calls and redos, the tournament's calls). Every other boundary (a human gate, a pause, a
    region, a consumer step, a checkpoint) runs alone, once every step before it has
    finished, and nothing after it starts before it has."""
    if getattr(step, "checkpoint", None) is not None:
        return False
    if isinstance(step, AgentStep):
        return step.dispatch == "engine"
    if isinstance(step, GateStep | TournamentStep):
        return judged and not (isinstance(step, GateStep) and step.is_human())
    if isinstance(step, RunStep) and flows is not None:
        flow = flows.get(step.flow)
        body = flow.steps if flow is not None else []
        return flow is not None and all(getattr(c, "dispatch", "engine") == "engine" for c in body)
    return isinstance(step, SetStep)


def redo_target(step: AnyStep) -> str | None:
    """The step a model gate re-runs when it fails (its ``fail_route``, redos allowed), or
    None: a human gate, a terminal route, no redos, or not a gate."""
    if not isinstance(step, GateStep) or step.is_human() or step.max_redos <= 0:
        return None
    route = step.fail_route
    return None if route is None or route.startswith("terminal:") else route


def redo_waits(ordered: Sequence[AnyStep]) -> list[list[int]]:
    """For each position, the positions of the steps it waits for because a model gate may
    redo a step: the gate waits for every step before it that reads its redo target (they
    read the output the gate judges), and a step after the gate that reads the target waits
    for the gate (it reads the output the gate let pass), as in the plan-order walk."""
    read = [reads(step) for step in ordered]
    extra: list[list[int]] = [[] for _ in ordered]
    for g, gate in enumerate(ordered):
        target = redo_target(gate)
        if target is None:
            continue
        for k, names in enumerate(read):
            if k < g and target in names:
                extra[g].append(k)
            elif k > g and target in names:
                extra[k].append(g)
    return extra


def reads(step: AnyStep) -> list[str]:
    """The steps ``step`` waits for before it may start beside others: its deps and every step
    its prompt (a ``run`` step: its ``with``), expressions (ensure, until, when) and file
    predicates read; a model gate's redo target too (``redo_target``)."""
    out = list(step.deps)
    if (target := redo_target(step)) is not None:
        out.append(target)
    texts = [t for t in (getattr(step, "prompt", None),) if isinstance(t, str)]
    if isinstance(step, RunStep):
        texts += with_strings(step.with_)
    for predicate in getattr(step, "ensure", []):
        if isinstance(predicate, EnsureFileExists):
            texts.append(predicate.file_exists)
        elif isinstance(predicate, EnsureFileContains):
            texts.append(predicate.file_contains.path)
    for text in texts:
        try:
            segments = parse_template(text)
        except RefError:
            continue  # refused at validation
        out += [s.name for s in segments if isinstance(s, Ref) and s.source == "steps"]
    cel = [text for text, _, _ in step_expressions(step)]
    if isinstance(step, AgentStep | SetStep | RunStep) and step.when is not None:
        cel.append(step.when)
    for text in cel:
        out += list(analyse(text).steps)
    return list(dict.fromkeys(out))


def with_strings(value: object) -> list[str]:
    """Every string in a ``with`` value (templates, at any depth)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in with_strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in with_strings(v)]
    return []


def forward_routers(steps: Sequence[AnyStep]) -> dict[str, set[str]]:
    """Route target -> the steps that route to it, for targets later in the scope (an earlier
    target is a loop back: the walk jumps there)."""
    position = {s.id: i for i, s in enumerate(steps)}
    routers: dict[str, set[str]] = {}
    for i, step in enumerate(steps):
        for target in _routes(step):
            if position.get(target, -1) > i:
                routers.setdefault(target, set()).add(step.id)
    return routers


def gate_route_targets(step: AnyStep) -> tuple[str | None, str | None]:
    """(on_approve, on_kill) of a human gate; (None, None) otherwise."""
    if isinstance(step, GateStep) and step.gate is not None:
        return step.gate.on_approve, step.gate.on_kill
    return None, None


def verdict(
    step: AnyStep,
    *,
    armed: bool,
    routers: Mapping[str, set[str]],
    states: Mapping[str, str],
    outputs: Mapping[str, object],
    gates: Mapping[str, AnyStep],
    local: Collection[str] = frozenset(),
) -> Verdict:
    """Whether ``step`` runs now. ``states`` and ``outputs``: the scope's steps by their ids in
    it; ``armed``: a route to ``step`` was taken; ``gates``: the scope's human gates;
    ``local``: the skipped ones whose skip was their own ``when`` (a met dep)."""
    routed_by = routers.get(step.id)
    if routed_by is not None and not armed:
        return Verdict("skip", f"no route to it was taken ({', '.join(sorted(routed_by))})")
    skipped: str | None = None
    for dep in step.deps:
        if routed_by is not None and dep in routed_by:
            continue  # the route that armed it is what it waited for
        state = states.get(dep, "pending")
        if state == "skipped":
            if dep not in local:
                skipped = skipped or f"{dep} was skipped"
        elif state != "settled":
            return Verdict("strand", f"{dep} {_state_word(state)}")
        elif dep in gates and outputs.get(dep) == KILL:
            skipped = skipped or f"gate {dep} was killed"
    return Verdict("run") if skipped is None else Verdict("skip", skipped)


def _state_word(state: str) -> str:
    return "failed" if state == "failed" else "never ran"


def stranded_detail(stranded: Sequence[tuple[str, str | None]]) -> str:
    """The failure's message: each stranded step with why, at most 20 named."""
    shown = "; ".join(f"{sid} ({why})" if why else sid for sid, why in stranded[:20])
    more = f"; and {len(stranded) - 20} more" if len(stranded) > 20 else ""
    return (
        f"no runnable step remains and {len(stranded)} step(s) never ran: {shown}{more}; "
        "fix: make them depend on the on_fail target rather than the failed step, or drop "
        "on_fail so the failure itself fails the run"
    )
