"""Boundaries of the plan walk and their worst-case reservations.

Pure. The walk visits top-level steps in plan order; each is a *boundary* (a fan-out with its
chain is one region boundary, reserved whole and never interrupted). Before a boundary runs, its
worst case is reserved:

- agent: ``w = max(1, min(max_agents, max_attempts))`` invocations per attempt cycle, times
  ``iterate.max`` cycles, times ``1 + judged`` calls per attempt (each ``judged`` ensure is one
  model call), and as many stage timeouts;
- model gate: ``w(gate)`` plus ``max_redos * (w(route) + w(gate))`` (no redo allowance for a
  terminal route or none);
- region: activated items x the chain's ``w`` sum; wall divided by the concurrency;
- tournament: the child's worst-case calls (its profile's, capped by ``max_calls``), one timeout;
- human gate, pause and set: nothing (they dispatch nothing);
- ``run`` step: not a boundary; its flow's children are boundaries of their own (``children``,
  reserved one at a time as the body walks), counted in the defaults, caps and the worst case.

The plan's default call budget is the sum of the boundaries' reservations (a region counts each
activated item; the reference counts a chain member once, so a plan without a budget paused
before its first fan-out); the default wall ceiling is 1.5 x the sum of boundary wall
reservations. Extensions are capped at ``max(2 x plan total, sum of reservations)`` so a valid
plan can always be finished (the reference's own fix for the plain doubling rule).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from workflows.plan.model import (
    AgentStep,
    FanoutStep,
    Flow,
    GateStep,
    PauseStep,
    Plan,
    RunStep,
    SetStep,
    TournamentStep,
)
from workflows.tournament.profiles import get_profile
from workflows.tournament.profiles import plan as tournament_plan

__all__ = [
    "DEFAULT_STAGE_TIMEOUT_MS",
    "DEFAULT_TOURNAMENT_TIMEOUT_MS",
    "MAX_CONCURRENCY",
    "WALL_CEILING_MULTIPLIER",
    "Boundary",
    "BoundaryKind",
    "PlanTotals",
    "Reservation",
    "activated_items",
    "body_boundaries",
    "boundaries",
    "chain_owner",
    "downstream_of",
    "flat",
    "lanes",
    "occurrence",
    "plan_totals",
    "stage_timeout_ms",
    "tournament_calls",
    "unsatisfiable",
]

# Defaults are constants of the plan semantics (the same on every worker), never worker settings.
DEFAULT_STAGE_TIMEOUT_MS = 15 * 60 * 1000
DEFAULT_TOURNAMENT_TIMEOUT_MS = 60 * 60 * 1000
WALL_CEILING_MULTIPLIER = 1.5
MAX_CONCURRENCY = 256
"""Branches of one region in flight at once, whatever ``concurrency`` or ``max_fanout`` says
(validation refuses an explicit ``concurrency`` over it: ``workflows.plan.limits``)."""

BoundaryKind = Literal["agent", "gate", "human_gate", "pause", "region", "tournament", "run", "set"]
AnyStep = AgentStep | GateStep | FanoutStep | PauseStep | TournamentStep | RunStep | SetStep


@dataclass(frozen=True)
class Reservation:
    invocations: int
    wall_ms: int


@dataclass(frozen=True)
class Boundary:
    index: int
    step_id: str
    kind: BoundaryKind
    members: tuple[str, ...]
    """The steps this boundary dispatches (a region's chain; the gate's route is not listed)."""
    reservation: Reservation
    on_fail_target: bool = False
    """Runs only when a failing step routes to it (``on_fail``)."""
    children: tuple[Boundary, ...] = ()
    """A ``run`` step's body, each child a boundary of its own (``step_id`` unscoped)."""
    scope: str | None = None
    """The ``run`` step whose body this boundary is in (None: the top level)."""

    @property
    def label(self) -> str:
        """The scoped id: ``<run step>/<child>`` in a body."""
        return self.step_id if self.scope is None else f"{self.scope}/{self.step_id}"


def downstream_of(plan: Plan, step_id: str) -> list[str]:
    """``step_id`` and every step that depends on it, directly or not, in plan order (what a
    human gate's revise resets). A fan-out's chain members follow their fan-out."""
    members = chain_owner(plan)
    hit = {step_id}
    for step in plan.steps:
        owner = members.get(step.id)
        if any(d in hit for d in step.deps) or (owner is not None and owner in hit):
            hit.add(step.id)
        if isinstance(step, FanoutStep) and step.id in hit:
            hit.update(step.fanout.chain)
    out: list[str] = []
    for step in plan.steps:
        if step.id in hit:
            out.append(step.id)
            flow = plan.flows.get(step.flow) if isinstance(step, RunStep) else None
            out += [f"{step.id}/{child.id}" for child in flow.steps] if flow else []
    return out


def chain_owner(plan: Plan) -> dict[str, str]:
    """Chain member id -> the fan-out step that runs it."""
    return {
        member: step.id
        for step in plan.steps
        if isinstance(step, FanoutStep)
        for member in step.fanout.chain
    }


def activated_items(items: Sequence[Any], *, dedup: bool, max_fanout: int | None) -> list[Any]:
    """The items a fan-out runs: deduplicated (by canonical JSON) if asked, then the first
    ``max_fanout``: the cap limits activation, not only concurrency (as in the reference)."""
    chosen = list(items)
    if dedup:
        seen: set[str] = set()
        unique = []
        for item in chosen:
            key = json.dumps(item, sort_keys=True, separators=(",", ":"))
            if key not in seen:
                seen.add(key)
                unique.append(item)
        chosen = unique
    return chosen if max_fanout is None else chosen[:max_fanout]


def stage_timeout_ms(step: AnyStep) -> int:
    timeout = getattr(step, "timeout_ms", None)
    if timeout is not None:
        return int(timeout)
    return (
        DEFAULT_TOURNAMENT_TIMEOUT_MS
        if isinstance(step, TournamentStep)
        else DEFAULT_STAGE_TIMEOUT_MS
    )


def tournament_calls(step: TournamentStep) -> int:
    """The child tournament's worst-case calls (judge retries included), capped by max_calls."""
    spec = step.tournament
    worst = tournament_plan(spec.custom or get_profile(spec.profile)).worst_case_calls
    cap = step.tournament.max_calls
    return worst if cap is None else min(worst, cap)


def _w(step: AnyStep) -> int:
    if isinstance(step, AgentStep):
        return step.attempts() * step.iterations() * (1 + step.judged())
    if isinstance(step, GateStep):
        return step.attempts()
    if isinstance(step, TournamentStep):
        return tournament_calls(step)
    return 0


def occurrence(step: AgentStep | GateStep) -> Reservation:
    """One occurrence of a step (its first run, a redo, a re-run after revise): what its own
    ledger reserves before it, ``w`` invocations and ``w`` stage timeouts."""
    return Reservation(_w(step), _w(step) * stage_timeout_ms(step))


def _redo_allowance(gate: GateStep, steps: dict[str, AnyStep]) -> Reservation:
    route = gate.fail_route
    if gate.is_human() or gate.max_redos <= 0 or route is None or route.startswith("terminal:"):
        return Reservation(0, 0)
    target = steps.get(route)
    w_route = _w(target) if target is not None else 1
    wall_route = w_route * stage_timeout_ms(target) if target is not None else 0
    w_gate = _w(gate)
    return Reservation(
        gate.max_redos * (w_route + w_gate),
        gate.max_redos * (wall_route + w_gate * stage_timeout_ms(gate)),
    )


def region_reservation(step: FanoutStep, chain: Sequence[AnyStep], items: int) -> Reservation:
    """A region's reservation for ``items`` activated items."""
    per_item = sum(_w(s) for s in chain)
    per_item_wall = sum(_w(s) * stage_timeout_ms(s) for s in chain)
    return Reservation(items * per_item, math.ceil(items * per_item_wall / lanes(step, items)))


def lanes(step: FanoutStep, items: int) -> int:
    """Branches in flight at once: ``concurrency``, else ``max_fanout``, else one at a time
    (as in the reference: nothing asked for parallel branches), at most the items and never
    over ``MAX_CONCURRENCY``."""
    wanted = step.fanout.concurrency or step.fanout.max_fanout or 1
    return max(1, min(wanted, items, MAX_CONCURRENCY))


def worst_items(step: FanoutStep) -> int:
    """Activated items in the worst case: the literal list's, or ``max_fanout`` for a reference."""
    over = step.fanout.over
    if isinstance(over, list):
        return len(
            activated_items(over, dedup=step.fanout.dedup, max_fanout=step.fanout.max_fanout)
        )
    return step.fanout.max_fanout or 0


def boundaries(plan: Plan) -> list[Boundary]:
    """The walk's boundaries in plan order, each with its worst-case reservation; a ``run``
    step's boundary holds its flow's children."""
    return _boundaries(plan.steps, plan.flows, None)


def body_boundaries(steps: Sequence[AnyStep], scope: str | None = None) -> list[Boundary]:
    """A flow body's boundaries (its children), as a ``run`` step ``scope`` walks them."""
    return _boundaries(steps, {}, scope)


def _boundaries(
    steps_in_order: Sequence[AnyStep], flows: dict[str, Flow], scope: str | None
) -> list[Boundary]:
    steps: dict[str, AnyStep] = {s.id: s for s in steps_in_order}
    members = {m: s.id for s in steps_in_order if isinstance(s, FanoutStep) for m in s.fanout.chain}
    on_fail_targets = {
        s.on_fail for s in steps_in_order if isinstance(s, AgentStep | RunStep) and s.on_fail
    }
    out: list[Boundary] = []
    for step in steps_in_order:
        if step.id in members:
            continue
        kind: BoundaryKind
        dispatched: tuple[str, ...] = (step.id,)
        children: tuple[Boundary, ...] = ()
        if isinstance(step, FanoutStep):
            kind = "region"
            chain = [steps[m] for m in step.fanout.chain if m in steps]
            dispatched = tuple(step.fanout.chain)
            reservation = region_reservation(step, chain, worst_items(step))
        elif isinstance(step, GateStep) and step.is_human():
            kind, dispatched, reservation = "human_gate", (), Reservation(0, 0)
        elif isinstance(step, PauseStep):
            kind, dispatched, reservation = "pause", (), Reservation(0, 0)
        elif isinstance(step, SetStep):
            kind, dispatched, reservation = "set", (), Reservation(0, 0)
        elif isinstance(step, RunStep):
            kind, reservation = "run", Reservation(0, 0)
            flow = flows.get(step.flow)
            children = tuple(body_boundaries(flow.steps, step.id)) if flow is not None else ()
            dispatched = tuple(b.step_id for b in children)
        else:
            kind = "gate" if isinstance(step, GateStep) else step.kind
            own = Reservation(_w(step), _w(step) * stage_timeout_ms(step))
            if isinstance(step, TournamentStep):
                own = Reservation(_w(step), stage_timeout_ms(step))
            redo = _redo_allowance(step, steps) if isinstance(step, GateStep) else Reservation(0, 0)
            reservation = Reservation(
                own.invocations + redo.invocations, own.wall_ms + redo.wall_ms
            )
        out.append(
            Boundary(
                index=len(out),
                step_id=step.id,
                kind=kind,
                members=dispatched,
                reservation=reservation,
                on_fail_target=step.id in on_fail_targets,
                children=children,
                scope=scope,
            )
        )
    return out


def flat(walk: Sequence[Boundary]) -> list[Boundary]:
    """Every boundary a walk may reserve: the top level's and each sub-flow's children."""
    out: list[Boundary] = []
    for b in walk:
        out.append(b)
        out += flat(b.children)
    return out


@dataclass(frozen=True)
class PlanTotals:
    default_calls: int
    """The sum of the boundaries' reservations (a region counts each activated item; a gate
    its redo allowance): what the walk can spend without a human gate's revise."""
    default_wall_ms: int
    """1.5 x the sum of boundary wall reservations."""
    reserved_calls: int
    """Sum of boundary invocation reservations (a region counts every item)."""
    reserved_wall_ms: int
    calls: int
    """The plan's call total: its declared ``budget.calls``, else ``default_calls``."""
    wall_ms: int
    calls_cap: int
    """Extension cap: ``max(2 x calls, reserved_calls)``."""
    wall_cap_ms: int


def _default_calls(in_order: Sequence[AnyStep]) -> int:
    steps: dict[str, AnyStep] = {s.id: s for s in in_order}
    calls = sum(_w(s) for s in in_order)
    return calls + sum(
        _redo_allowance(s, steps).invocations for s in in_order if isinstance(s, GateStep)
    )


def plan_totals(
    plan: Plan, walk: Sequence[Boundary] | None = None, *, per_item: bool = True
) -> PlanTotals:
    """``per_item``: the default call budget is the sum of the boundaries' reservations, a
    region counting every activated item, so a plan without a budget is not paused before
    its first fan-out; False is the reference's rule (a chain member once), which runs
    recorded before the change replay with."""
    walk = flat(boundaries(plan) if walk is None else walk)
    reserved_calls = sum(b.reservation.invocations for b in walk)
    default_calls = _default_calls(plan.steps)
    for step in plan.steps:  # a flow's children count once per run step that calls it
        flow = plan.flows.get(step.flow) if isinstance(step, RunStep) else None
        default_calls += _default_calls(flow.steps) if flow is not None else 0
    if per_item:
        default_calls = max(default_calls, reserved_calls)
    reserved_wall = sum(b.reservation.wall_ms for b in walk)
    default_wall = math.ceil(reserved_wall * WALL_CEILING_MULTIPLIER)
    declared = plan.budget
    calls = declared.calls if declared and declared.calls is not None else default_calls
    wall = declared.wall_ms if declared and declared.wall_ms is not None else default_wall
    return PlanTotals(
        default_calls=default_calls,
        default_wall_ms=default_wall,
        reserved_calls=reserved_calls,
        reserved_wall_ms=reserved_wall,
        calls=calls,
        wall_ms=wall,
        calls_cap=max(2 * calls, reserved_calls),
        wall_cap_ms=max(2 * wall, reserved_wall),
    )


def unsatisfiable(
    walk: Sequence[Boundary], *, calls: int | None, wall_ms: int | None
) -> tuple[Boundary, str] | None:
    """The worst boundary an explicit budget cannot fit, and why (reservation-unsatisfiable);
    a sub-flow's children count as boundaries of their own."""
    walk = flat(walk)
    if calls is not None and walk:
        worst = max(walk, key=lambda b: b.reservation.invocations)
        if worst.reservation.invocations > calls:
            return worst, (
                f"calls={calls} is below the {worst.reservation.invocations} invocation(s) that "
                f"boundary {worst.label!r} reserves; fix: give at least "
                f"{worst.reservation.invocations} or lower that step's retries/fan-out"
            )
    if wall_ms is not None and walk:
        worst = max(walk, key=lambda b: b.reservation.wall_ms)
        if worst.reservation.wall_ms > wall_ms:
            return worst, (
                f"wall_ms={wall_ms} is below the {worst.reservation.wall_ms} ms that boundary "
                f"{worst.label!r} reserves; fix: give at least {worst.reservation.wall_ms} or "
                "lower that step's timeout_ms"
            )
    return None
