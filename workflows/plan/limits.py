"""How big a plan may be: its worst-case history and the widest region, checked at validation.

Pure. Temporal terminates a workflow whose history passes 50,000 events, and fails a workflow
task that runs longer than its deadlock timeout (2 s). A plan is one workflow, so both limits
bound what one plan may do; the document alone says its worst case, so ``ponder plan
validate`` (and a run's own validation of its input) refuses it before anything runs:

- ``plan.too_large``: the worst-case history estimate passes ``HISTORY_EVENTS_BUDGET`` (half of
  Temporal's limit, the share tournaments use: signals, provider waits and the events of a
  person's messages stay outside the estimate and inside the margin);
- ``fanout.concurrency``: a region runs at most ``MAX_CONCURRENCY`` branches at once (an
  explicit ``concurrency`` over it is refused; the default, ``max_fanout``, is capped to it).

The estimate, per boundary (``boundaries``), times the passes the walk can make over it:

- an invocation is its activities (the model call; a path check when it declares artifacts;
  the write snapshot and landed check of a file deliverable; the ``evaluate_cel`` marker of its
  ensure expressions, the file probe of its file predicates and the ``until`` marker of an
  iterating step), each at most ``EVENTS_PER_ACTIVITY`` events (scheduled, started,
  completed, and a workflow task of its own); a judged ensure's call is an invocation itself;
  a consumer step's issuance replaces the model call with ``EVENTS_PER_CONSUMER``;
- a set step is its evaluation marker and a file probe;
- a region adds one pacing timer per ``STARTS_PER_TASK`` starts (``plan_run/pacing``);
- a tournament step is a child workflow in the parent's history (its own history is its own);
- a ``run`` step is its children, each a boundary of its own, per ``run`` step that calls it;
- a pause, a human gate and each dispatching boundary's possible budget wait write the trace
  and receive a message: ``EVENTS_PER_WAIT``; a gate's deadline and escalation timers add
  ``EVENTS_PER_TIMER`` each, its escalation post an activity (and preflight's notifier check
  one, once);
- with ``training_pairs``, every agent invocation may add its capture activity;
- an isolated region (``isolation: worktree``) adds its base, merge and land activities and two
  per item (the worktree's add and finish), and preflight one git probe;
- passes: one, plus every revise round a human gate allows; a human-gate route back to an
  earlier step can loop as long as the calls cap lets it, so such a plan is bounded by the cap
  (every pass dispatches at least one invocation) instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workflows.history_budget import HISTORY_EVENTS_BUDGET, TEMPORAL_HISTORY_EVENTS
from workflows.plan.boundaries import (
    MAX_CONCURRENCY,
    AnyStep,
    Boundary,
    boundaries,
    plan_totals,
    worst_items,
)
from workflows.plan.deadlines import notifiers_named
from workflows.plan.errors import PlanError
from workflows.plan.feature_rules import isolated_fanouts
from workflows.plan.flows import invocations
from workflows.plan.model import (
    AgentStep,
    EnsureExpr,
    EnsureFileContains,
    EnsureFileExists,
    FanoutStep,
    GateStep,
    Plan,
    RunStep,
    TournamentStep,
)

__all__ = [
    "EVENTS_PER_ACTIVITY",
    "EVENTS_PER_CONSUMER",
    "MAX_CONCURRENCY",
    "STARTS_PER_TASK",
    "HistoryEstimate",
    "estimate_history",
    "events_per_invocation",
    "limit_errors",
]

STARTS_PER_TASK = 64
"""Invocations one workflow task starts at most; the rest start in the next task."""
PROMPT_CHARS_PER_TASK = 4_000_000
"""Prompt text one workflow task assembles at most (the references spliced in, defanged): a
region over a large upstream value starts the rest of its branches in the next task."""
EVENTS_PER_ACTIVITY = 6
EVENTS_PER_PACING_TIMER = 5
EVENTS_PER_CHILD = 9
EVENTS_PER_WAIT = 12
EVENTS_PER_TIMER = 5
EVENTS_PER_CONSUMER = 16
"""A consumer issuance instead of the model call: its timeout timer, the step_done update's
accepted and completed events with their workflow task, and the trace written as the run starts
waiting (12 measured for one answered issuance)."""
EVENTS_BASE = 30
"""Start, the first workflow task, markers, the final trace write and the close."""

_Step = AgentStep | GateStep


@dataclass(frozen=True)
class HistoryEstimate:
    events: int
    passes: int
    biggest: Boundary | None
    biggest_events: int


def events_per_invocation(step: object) -> int:
    if not isinstance(step, AgentStep | GateStep):
        return EVENTS_PER_ACTIVITY
    consumer = isinstance(step, AgentStep) and step.dispatch == "consumer"
    activities = 0 if consumer else 1
    if step.artifacts.reads or step.artifacts.writes:
        activities += 1
    if isinstance(step, AgentStep) and step.deliverable == "file":
        activities += 2
    if isinstance(step, AgentStep):
        activities += any(isinstance(p, EnsureExpr) for p in step.ensure)
        activities += any(isinstance(p, EnsureFileExists | EnsureFileContains) for p in step.ensure)
        activities += step.iterate is not None
    return activities * EVENTS_PER_ACTIVITY + (EVENTS_PER_CONSUMER if consumer else 0)


def _per_invocation(plan: Plan, step: object) -> int:
    """``events_per_invocation`` plus the training-pair capture activity of an agent step."""
    capture = EVENTS_PER_ACTIVITY if plan.training_pairs and isinstance(step, AgentStep) else 0
    return events_per_invocation(step) + capture


def _gate_timer_events(step: object) -> int:
    gate = step.gate if isinstance(step, GateStep) else None
    if gate is None:
        return 0
    events = EVENTS_PER_TIMER if gate.deadline is not None else 0
    if gate.escalate is not None:
        events += EVENTS_PER_TIMER + (EVENTS_PER_ACTIVITY if gate.escalate.notify else 0)
    return events


def _boundary_events(
    plan: Plan, boundary: Boundary, step_of: Callable[[str], AnyStep] | None = None
) -> int:
    """``step_of``: the lookup in the boundary's scope (a sub-flow's body; default the plan)."""
    step_of = step_of or plan.step
    step = step_of(boundary.step_id)
    invocations = boundary.reservation.invocations
    if boundary.kind in ("pause", "human_gate"):
        return EVENTS_PER_WAIT + _gate_timer_events(step)
    if boundary.kind == "set":
        return 2 * EVENTS_PER_ACTIVITY
    if isinstance(step, RunStep):  # not a boundary: its children are, each of its own
        body = {c.id: c for c in plan.flows[step.flow].steps}
        return sum(_boundary_events(plan, c, body.__getitem__) for c in boundary.children)
    if isinstance(step, TournamentStep):
        return EVENTS_PER_CHILD + EVENTS_PER_WAIT
    if isinstance(step, FanoutStep):
        members = [step_of(m) for m in step.fanout.chain]
        per = max((_per_invocation(plan, m) for m in members), default=EVENTS_PER_ACTIVITY)
        timers = math.ceil(invocations / STARTS_PER_TASK) * EVENTS_PER_PACING_TIMER
        return invocations * per + timers + EVENTS_PER_WAIT + _worktree_events(step)
    per = _per_invocation(plan, step)
    if isinstance(step, GateStep) and step.fail_route and not step.fail_route.startswith("term"):
        per = max(per, _per_invocation(plan, step_of(step.fail_route)))
    return invocations * per + EVENTS_PER_WAIT


def _worktree_events(step: FanoutStep) -> int:
    """An isolated region's git activities: its base, merge and land, and per item its
    worktree's add and finish."""
    if step.fanout.isolation != "worktree":
        return 0
    return (3 + 2 * worst_items(step)) * EVENTS_PER_ACTIVITY


def _loops_back(plan: Plan) -> bool:
    """A human gate that routes (approve or kill) to itself or an earlier step."""
    scopes: list[Sequence[AnyStep]] = [plan.steps, *(f.steps for f in plan.flows.values())]
    for steps in scopes:
        index = {s.id: i for i, s in enumerate(steps)}
        for i, step in enumerate(steps):
            if isinstance(step, GateStep) and step.gate is not None:
                for target in (step.gate.on_approve, step.gate.on_kill):
                    if target is not None and index.get(target, len(steps)) <= i:
                        return True
    return False


def estimate_history(plan: Plan) -> HistoryEstimate:
    walk = boundaries(plan)
    per = [(_boundary_events(plan, b), b) for b in walk]
    one_pass = sum(events for events, _ in per)
    biggest_events, biggest = max(per, key=lambda p: p[0], default=(0, None))
    # A body's gate revises within its body; counted as a pass over the whole plan, an upper
    # bound.
    rounds = sum(
        (s.gate.max_rounds or plan.max_rounds or 0)
        for s in [*plan.steps, *(c for f in plan.flows.values() for c in f.steps)]
        if isinstance(s, GateStep) and s.gate is not None and s.gate.on_revise is not None
    )
    passes = 1 + rounds
    notifiers = EVENTS_PER_ACTIVITY if notifiers_named(plan) else 0  # preflight's check
    notifiers += EVENTS_PER_ACTIVITY if isolated_fanouts(plan) else 0  # and its git probe
    events = EVENTS_BASE + notifiers + passes * one_pass
    if _loops_back(plan):
        cap = plan_totals(plan, walk).calls_cap
        costliest = max(
            (_per_invocation(plan, s) for _, s in invocations(plan)),
            default=EVENTS_PER_ACTIVITY,
        )
        waits = sum(EVENTS_PER_WAIT + _gate_timer_events(plan.step(b.step_id)) for b in walk)
        passes = max(passes, cap)
        events = EVENTS_BASE + cap * costliest + passes * waits
    return HistoryEstimate(events, passes, biggest, biggest_events)


def limit_errors(plan: Plan) -> list[PlanError]:
    """``fanout.concurrency`` over the ceiling, then ``plan.too_large``."""
    errors = []
    for i, step in enumerate(plan.steps):
        if isinstance(step, FanoutStep) and (step.fanout.concurrency or 0) > MAX_CONCURRENCY:
            errors.append(
                PlanError(
                    "fanout.concurrency",
                    f"steps[{i}].fanout.concurrency",
                    f"concurrency={step.fanout.concurrency} is over the ceiling of "
                    f"{MAX_CONCURRENCY} branches in flight at once (one workflow runs them "
                    f"all); fix: concurrency: {MAX_CONCURRENCY} or less",
                )
            )
    estimate = estimate_history(plan)
    if estimate.events <= HISTORY_EVENTS_BUDGET:
        return errors
    where, what = "steps", ""
    if estimate.biggest is not None:
        i = next(n for n, s in enumerate(plan.steps) if s.id == estimate.biggest.step_id)
        step = plan.steps[i]
        where = f"steps[{i}]"
        if isinstance(step, FanoutStep):
            field = "max_fanout" if step.fanout.max_fanout is not None else "over"
            where += f".fanout.{field}"
        what = (
            f"; the largest boundary, {step.id!r}, is about {estimate.biggest_events:,} events "
            f"({estimate.biggest.reservation.invocations:,} invocation(s))"
        )
    passes = f" over {estimate.passes} pass(es) (revise rounds)" if estimate.passes > 1 else ""
    return [
        *errors,
        PlanError(
            "plan.too_large",
            where,
            f"the plan's worst case is about {estimate.events:,} history events{passes}, over "
            f"{HISTORY_EVENTS_BUDGET:,} (half of Temporal's {TEMPORAL_HISTORY_EVENTS:,}-event "
            f"limit for one workflow){what}; fix: fewer items (max_fanout), retries, redos or "
            "rounds, or split the work into several runs",
        ),
    ]
