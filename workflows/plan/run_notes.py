"""Notes ``ponder plan validate`` prints for a valid plan: where a run will behave differently
from the reference interpreter in a way its author should know before anything runs.

Pure. One note per consumer step (``dispatch: consumer``, top level, chain member or in a flow)
whose retries or timeout are ponder's defaults:

- a failure its consumer reports is class ``transport``, retried only when ``retry.on`` lists
  ``transport`` and ``max_attempts`` allows another attempt;
- without ``timeout_ms``, the issuance is void after the default stage timeout (15 min), where
  the reference waits for its consumer without limit.

And, in a plan whose ``concurrency`` is above 1, one note per step that runs alone
(``activation.overlaps`` says which) beside a step it could otherwise overlap: one that neither
waits for it nor is waited for by it, directly or through others (``activation.reads``, the
routes to a step and a model gate's redo waits, as the concurrent walk orders them), and
that may run in the same run (not on the other side of a human gate's kill route or a step's
``on_fail``). The reference runs such steps side by side, so a ported flow would be slower
without knowing why. A scope whose steps form one chain gets none: running alone changes
nothing there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from workflows.plan.activation import (
    forward_routers,
    gate_route_targets,
    overlaps,
    reads,
    redo_target,
    redo_waits,
)
from workflows.plan.boundaries import DEFAULT_STAGE_TIMEOUT_MS, AnyStep
from workflows.plan.model import (
    AgentStep,
    FanoutStep,
    GateStep,
    LedgerBudget,
    PauseStep,
    Plan,
    RunStep,
    TournamentStep,
)
from workflows.plan.note_codes import note
from workflows.plan.refs import whole_reference

__all__ = ["consumer_notes", "limit_notes", "runs_alone_notes"]

_CONSUMER_WHY = "the run counts a consumer's wait as agent time, apart from a person's"


def consumer_notes(plan: Plan) -> list[str]:
    """A note for each consumer step whose failure or timeout handling differs from the
    reference's, in plan order then each flow's (an explicit choice of both gets none)."""
    notes = []
    for where, step in _consumer_steps(plan):
        clauses = []
        retried = "transport" in step.retry.on and step.retry.max_attempts > 1
        if not retried:
            clauses.append(
                "a failure its consumer reports (class transport) is not retried: retry.on "
                f"is {list(step.retry.on)} and max_attempts {step.retry.max_attempts}; to retry "
                "it, list transport in retry.on, with max_attempts 2 or more and idempotent: true"
            )
        if step.timeout_ms is None:
            clauses.append(
                f"with no step_done within {DEFAULT_STAGE_TIMEOUT_MS} ms (15 min, the default "
                "stage timeout) its token is void and the attempt fails class timeout, where "
                "the reference waits without limit; set timeout_ms to choose"
            )
        if clauses:
            notes.append(
                note("consumer-defaults", f"{where} (dispatch: consumer): " + "; ".join(clauses))
            )
    return notes


def _named_steps(plan: Plan) -> Iterator[tuple[str, AnyStep]]:
    """Every step with how a note names it: the top level's in plan order (``step a``), then
    each flow's (``flow f step b``)."""
    for step in plan.steps:
        yield f"step {step.id}", step
    for name, flow in plan.flows.items():
        for child in flow.steps:
            yield f"flow {name} step {child.id}", child


def _consumer_steps(plan: Plan) -> Iterator[tuple[str, AgentStep]]:
    for where, step in _named_steps(plan):
        if isinstance(step, AgentStep) and step.dispatch == "consumer":
            yield where, step


def limit_notes(plan: Plan) -> list[str]:
    """One note when any ledger of the plan (the run's, a step's, a fan-out's, a sub-flow's)
    has a token or USD limit: ponder stops the next call once spending reaches it."""
    run = plan.budget
    where = ["plan"] if run is not None and (run.tokens, run.usd) != (None, None) else []
    for named, step in _named_steps(plan):
        budget = getattr(step, "budget", None)
        if isinstance(budget, LedgerBudget) and (budget.tokens, budget.usd) != (None, None):
            where.append(named)
    if not where:
        return []
    return [
        note(
            "limit-stops-at-reached",
            f"token or USD limits ({', '.join(where)}): the next call waits for an extension "
            "once spending reaches a limit (>=), where the reference still dispatches at it "
            "(<=); a call sent at the limit would pass it",
        )
    ]


def runs_alone_notes(plan: Plan) -> list[str]:
    """A note for each step that runs alone beside an independent step of its scope (the top
    level, or the body of a flow a ``run`` step calls), when the plan's ``concurrency`` is above
    1; in plan order, then each called flow's."""
    if (plan.concurrency or 1) <= 1:
        return []
    notes = _scope_notes(plan, plan.steps, "")
    called = {step.flow for step in plan.steps if isinstance(step, RunStep)}
    for name, flow in plan.flows.items():
        if name in called:
            notes += _scope_notes(plan, flow.steps, f" in flow {name!r}")
    return notes


def _scope_notes(plan: Plan, steps: Sequence[AnyStep], where: str) -> list[str]:
    members = {m for s in steps if isinstance(s, FanoutStep) for m in s.fanout.chain}
    walked = [s for s in steps if s.id not in members]  # a fan-out and its chain: one boundary
    alone = [not overlaps(s, flows=plan.flows, judged=True) for s in walked]
    if not any(alone):
        return []
    waits = _waits(walked, {s.id: s for s in steps})
    followers: list[set[int]] = [set() for _ in walked]
    for k, direct in enumerate(waits):
        for j in direct:
            followers[j].add(k)
    above = _closure(waits, range(len(walked)))
    below = _closure(followers, reversed(range(len(walked))))
    related = {k: above[k] | below[k] | 1 << k for k, lone in enumerate(alone) if lone}
    for one, other in _either_or(walked, below):
        for k in related:
            if one >> k & 1:
                related[k] |= other
            elif other >> k & 1:
                related[k] |= one
    everyone = (1 << len(walked)) - 1
    return [_note(plan, walked[k], where) for k, bits in related.items() if bits != everyone]


def _waits(walked: Sequence[AnyStep], by_id: Mapping[str, AnyStep]) -> list[set[int]]:
    """For each step of the scope's walk, the positions of the steps it waits for."""
    position = {s.id: k for k, s in enumerate(walked)}
    routers = forward_routers(walked)
    waits: list[set[int]] = []
    for step in walked:
        names = [*reads(step), *routers.get(step.id, ())]
        if isinstance(step, FanoutStep):  # its items and its chain read what it waits for
            over = step.fanout.over
            ref = whole_reference(over) if isinstance(over, str) else None
            names += [ref.name] if ref is not None and ref.source == "steps" else []
            names += [n for m in step.fanout.chain if m in by_id for n in reads(by_id[m])]
        waits.append({position[n] for n in names if n in position and n != step.id})
    if any(redo_target(step) for step in walked):  # else it would read every step again
        for k, extra in enumerate(redo_waits(walked)):
            waits[k].update(extra)
    return waits


def _either_or(walked: Sequence[AnyStep], below: Sequence[int]) -> Iterator[tuple[int, int]]:
    """Pairs of position sets of which at most one runs, so never side by side: what only a
    human gate's kill route reaches against the rest behind the gate, and what only a step's
    ``on_fail`` reaches against what depends on the step (skipped or stranded the other way)."""
    position = {s.id: k for k, s in enumerate(walked)}
    for k, step in enumerate(walked):
        _, on_kill = gate_route_targets(step)
        target = on_kill if on_kill is not None else getattr(step, "on_fail", None)
        t = position.get(target or "")
        if t is None or t <= k:
            continue  # no route, or one back: a jump, not a branch
        routed = below[t] | 1 << t
        yield routed, below[k] & ~routed


def _closure(edges: Sequence[set[int]], order: Iterable[int]) -> list[int]:
    """Each position's transitive ``edges`` as a bit set, in one pass over ``order``: a valid
    plan's waits all point back (deps, references and routes name earlier steps), so plan order
    settles what a step waits for, and reverse order what follows it."""
    out = [0] * len(edges)
    for k in order:
        for j in edges[k]:
            out[k] |= 1 << j | out[j]
    return out


def _note(plan: Plan, step: AnyStep, where: str) -> str:
    kind, what, why = _why(plan, step)
    return note(
        "runs-alone",
        f"{kind} {step.id!r}{where} runs alone: concurrency does not overlap {what} with "
        f"other steps ({why})",
    )


def _why(plan: Plan, step: AnyStep) -> tuple[str, str, str]:
    """(the step's kind, what runs alone, why) for a step ``overlaps`` keeps alone."""
    if isinstance(step, FanoutStep):
        return "fan-out", "a fan-out", "its worst case is known only once its items resolve"
    if isinstance(step, GateStep) and step.is_human():
        return "human gate", "a human gate", "a revise walks the run again from its target"
    if isinstance(step, PauseStep):
        return "pause", "a pause", "the run holds there until it is resumed"
    if isinstance(step, AgentStep) and step.dispatch == "consumer":
        return "consumer step", "a consumer step", _CONSUMER_WHY
    if isinstance(step, RunStep) and not overlaps(
        step.model_copy(update={"checkpoint": None}), flows=plan.flows
    ):
        return "run step", f"a run step whose flow {step.flow!r} has a consumer step", _CONSUMER_WHY
    # Only its checkpoint keeps it alone.
    return (
        _kind(step),
        f"a step with a checkpoint ({step.checkpoint})",
        "a revert restores the run to that one point of its walk",
    )


def _kind(step: AnyStep) -> str:
    if isinstance(step, GateStep):
        return "model gate"
    if isinstance(step, TournamentStep):
        return "tournament step"
    return f"{step.kind} step"
