"""The concurrent walk of a scope (the top level, or behind ``plan-concurrent-bodies`` a
sub-flow's body): independent steps in flight together, within the plan's ``concurrency`` and
the run's budget (docs/plans.md, "Concurrent steps").

    scan the boundaries in plan order, starting what may start:
        a step that may overlap (``activation.overlaps``: an engine agent step, a set step,
        behind ``plan-concurrent-subflows`` a ``run`` step, and behind
        ``plan-concurrent-gates-tournaments`` a model gate and a tournament step, a gate after
        the steps reading what it may redo and before the later ones that read it,
        ``activation.redo_waits``) starts once every step it reads
        (``activation.reads``) and every route to it has finished, and fewer than
        ``concurrency`` are in flight; activation and its ``when`` say whether it runs (as
        in the plan-order walk); its nested ledgers are checked, then
        the run's ledger must hold its worst case beside every reservation in flight
        (``Overlap.fits``): if not, nothing more starts until what is in flight has finished
        (with nothing in flight it reserves as the plan-order walk does, and may wait
        ``awaiting_budget``)
        a ``run`` step reserves nothing itself: each child of its body, as the body walks,
        joins the reservation in flight once its worst case fits beside it (``Overlap.enter``;
        with nothing in flight it reserves as the plan-order walk does), and leaves it when
        done; a human gate in the body waits while the rest goes on
        any other boundary starts alone (activation and its ``when`` decide as for any step),
        once everything before it has finished, and nothing after it starts before it has; a
        route back from it (a revise) walks again from there
    wait for the first step in flight to finish (``workflow.wait``, deterministic); a failure
    that fails the run is raised once every step still in flight has finished (their calls are
    paid for: their outputs are kept); a revert out of a body's wait restores once every
    step still in flight has finished

The steps in flight share one open reservation on the run's ledger, the sum of their worst
cases, closed (and the wall clock it took charged once) when the last of them finishes, so an
overlap never spends past the run's budget. A body walks the same way with two more rules: its
children join the reservation its ``run`` step's siblings share (with nothing of its own in
flight a child waits there for room, ``Overlap.enter``), and a child starts beside the body's
others only when the sub-flow's ledger holds all their worst cases at once
(``Ledgers.room_beside``), else it waits for them; a revert out of a body's wait is the top
level's to apply.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activation import Verdict, overlaps, reads, redo_waits
    from workflows.plan.boundaries import Boundary, Reservation
    from workflows.plan.checkpoints import Reverted
    from workflows.plan.ledger import PlanLedger
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.state import PlanRunState

__all__ = [
    "CONCURRENT_BODIES_PATCH",
    "CONCURRENT_JUDGED_PATCH",
    "CONCURRENT_SUBFLOWS_PATCH",
    "CONCURRENT_WALK_PATCH",
    "Hooks",
    "Overlap",
    "walk_overlapping",
]

CONCURRENT_WALK_PATCH = "plan-concurrent-walk"
CONCURRENT_SUBFLOWS_PATCH = "plan-concurrent-subflows"
CONCURRENT_BODIES_PATCH = "plan-concurrent-bodies"
CONCURRENT_JUDGED_PATCH = "plan-concurrent-gates-tournaments"


class Overlap:
    """The run ledger's one open reservation, shared by the steps in flight."""

    def __init__(self, ledger: PlanLedger) -> None:
        self.ledger = ledger
        self.members = 0
        self.opened: datetime | None = None
        self.pausing = False
        """A body's child is waiting for a budget extension (one such wait at a time)."""

    def fits(self, step_id: str, res: Reservation) -> bool:
        """Whether ``res`` fits beside what is reserved in flight (the ledger's own rule)."""
        active = self.ledger.active
        held = (active.invocations_left, active.wall_ms) if active is not None else (0, 0)
        both = Reservation(res.invocations + held[0], res.wall_ms + held[1])
        return self.ledger.need(step_id, both) is None

    def join(self, step_id: str, res: Reservation) -> None:
        active = self.ledger.active
        if active is None:
            self.ledger.open(step_id, res)
            self.opened = workflow.now()
        else:
            active.invocations_left += res.invocations
            active.wall_ms += res.wall_ms
        self.members += 1

    async def enter(
        self, step_id: str, res: Reservation, reserve: Callable[[], Awaitable[None]]
    ) -> None:
        """Join once ``res`` fits beside what is in flight. When it does not fit even alone,
        ``reserve`` waits for an extension (``awaiting_budget``), then it is asked again:
        a step may have joined meanwhile."""
        while not self.fits(step_id, res):
            if self.members == 0 and not self.pausing:
                self.pausing = True
                try:
                    await reserve()
                finally:
                    self.pausing = False
                continue
            await workflow.wait_condition(
                lambda: self.fits(step_id, res) or (self.members == 0 and not self.pausing)
            )
        self.join(step_id, res)

    def leave(self) -> None:
        self.members -= 1
        if self.members == 0 and self.opened is not None:
            elapsed = workflow.now() - self.opened
            self.ledger.spend_wall(int(elapsed.total_seconds() * 1000))
            self.ledger.close()
            self.opened = None


@dataclass
class Hooks:
    """What the plan-order walk lends the concurrent one."""

    decide: Callable[[Boundary], Awaitable[Verdict]]
    """Activation, then ``when``: run, skip or strand."""
    not_run: Callable[[Boundary, Verdict], None]
    alone: Callable[[Boundary], Awaitable[str | None]]
    """Run a boundary as the plan-order walk does; the step it jumps to, or None."""
    admit: Callable[[Boundary], PlanFailure | str | None]
    """The nested ledgers' check of an overlapping step: a failure that fails the run, a
    jump (the step's own ledger refused it: routed by its ``on_fail``), or None to go on."""
    reserve: Callable[[Boundary], Awaitable[None]]
    """Wait until the step's worst case fits the run's ledger (nothing in flight)."""
    overlapped: Callable[[Boundary, Overlap], Coroutine[Any, Any, str | None]]
    """Run an overlapping step (already admitted and joined); the step it routes to."""
    revert: Callable[[str], int] | None
    """Apply a revert: the position the walk goes on from (None: a body's, raised to the top
    level, which restores)."""
    routed: Callable[[Boundary, str], None]
    """A finished boundary took a route (traced)."""
    subflows: bool = False
    """``run`` steps overlap too (``CONCURRENT_SUBFLOWS_PATCH``)."""
    room: Callable[[Boundary, list[Boundary]], bool] | None = None
    """Whether a step fits beside the scope's own steps in flight (a body's: its sub-flow's
    ledger must hold all their worst cases at once); when not, it waits for them."""
    judged: bool = False
    """Model gates and tournament steps overlap too (``CONCURRENT_JUDGED_PATCH``)."""
    shared: bool = False
    """The pool is shared with steps outside this scope (a body's siblings): with nothing of
    its own in flight, a step waits in the pool for room (``Overlap.enter``)."""
    started: set[int] = field(default_factory=set)
    done: set[int] = field(default_factory=set)


async def walk_overlapping(
    run: PlanRunState, scope: Scope, steps: list[Boundary], limit: int, hooks: Hooks, pool: Overlap
) -> None:
    position = {b.step_id: k for k, b in enumerate(steps)}
    waits: list[list[int]] = []
    for k, b in enumerate(steps):
        step = scope.step(b.step_id)
        # Only routes forward: a route back (to an earlier step) is a jump, not a wait.
        routers = [s.step_id for s in steps[:k] if _routes_to(scope, s, b.step_id)]
        waits.append([position[r] for r in [*reads(step), *routers] if r in position])
    if hooks.judged:  # a gate's redo rewrites an output: who reads it, waits as it would in order
        extra = redo_waits([scope.step(b.step_id) for b in steps])
        waits = [[*w, *e] for w, e in zip(waits, extra, strict=True)]
    inflight: dict[int, asyncio.Task[str | None]] = {}
    started, done = hooks.started, hooks.done
    while True:
        before = (len(started), len(done))
        k = 0
        while k < len(steps):
            if k in started:
                k += 1
                continue
            boundary = steps[k]
            flows = scope.plan.flows if hooks.subflows else None
            if not overlaps(scope.step(boundary.step_id), flows=flows, judged=hooks.judged):
                if inflight or any(j not in done for j in range(k)):
                    break  # it runs alone, after everything before it
                started.add(k)
                verdict = await hooks.decide(boundary)
                if verdict.action != "run":
                    hooks.not_run(boundary, verdict)
                    done.add(k)
                    k += 1
                    continue
                try:
                    jump = await hooks.alone(boundary)
                except Reverted as exc:
                    if hooks.revert is None:
                        raise
                    _rewind(started, done, hooks.revert(exc.label))
                    k = 0
                    continue
                done.add(k)
                if jump is not None:
                    hooks.routed(boundary, jump)
                    if position[jump] <= k:  # a route back walks again from its target
                        _rewind(started, done, position[jump])
                        k = 0
                        continue
                k += 1
                continue
            if len(inflight) >= limit or any(j not in done for j in waits[k]):
                k += 1
                continue
            verdict = await hooks.decide(boundary)
            if verdict.action != "run":
                hooks.not_run(boundary, verdict)
                started.add(k)
                done.add(k)
                k += 1  # what waited for it is later in the plan: the scan reaches it
                continue
            refused = hooks.admit(boundary)
            if isinstance(refused, PlanFailure):
                await _settle(inflight)
                raise refused
            if refused is not None:  # its own ledger refused it: routed by its on_fail
                started.add(k)
                done.add(k)
                hooks.routed(boundary, refused)
                k += 1
                continue
            res = boundary.reservation
            beside = [steps[j] for j in sorted(inflight)]
            if beside and hooks.room is not None and not hooks.room(boundary, beside):
                break  # its sub-flow's ledger cannot hold it beside them: wait for them
            sid = scope.sid(boundary.step_id)
            joins = boundary.kind != "run"  # a body's children join one by one (Overlap.enter)
            if joins and not pool.fits(sid, res):
                if inflight:
                    break  # admit only what fits: wait for what is in flight
                if hooks.shared:  # others hold the pool: wait in it (and join) once room is made
                    await pool.enter(sid, res, functools.partial(hooks.reserve, boundary))
                    joins = False
                else:
                    try:
                        await hooks.reserve(boundary)
                    except Reverted as exc:
                        assert hooks.revert is not None
                        _rewind(started, done, hooks.revert(exc.label))
                        k = 0
                        continue
            if joins:
                pool.join(sid, res)
            started.add(k)
            inflight[k] = asyncio.create_task(hooks.overlapped(boundary, pool))
            k += 1
        if not inflight:
            if len(done) == len(steps):
                return
            if (len(started), len(done)) == before:  # nothing can start: never spin
                left = [b.label for j, b in enumerate(steps) if j not in started]
                raise PlanFailure(
                    Reason.STEPS_STRANDED,
                    f"no step can start and {len(left)} never ran: {', '.join(left[:20])}",
                    step=left[0],
                )
            continue
        await workflow.wait(list(inflight.values()), return_when=asyncio.FIRST_COMPLETED)
        for k in sorted(inflight):  # in plan order, so the walk is the same on every replay
            task = inflight[k]
            if not task.done():
                continue
            del inflight[k]
            done.add(k)
            error = task.exception()
            if isinstance(error, Reverted) and hooks.subflows and hooks.revert is not None:
                await _settle(inflight)  # a revert out of a body's wait: restore once all ended
                _rewind(started, done, hooks.revert(error.label))
                break
            if error is not None:
                await _settle(inflight)
                raise error
            jump = task.result()
            if jump is not None:
                hooks.routed(steps[k], jump)


def _routes_to(scope: Scope, boundary: Boundary, target: str) -> bool:
    step = scope.step(boundary.step_id)
    on_fail = getattr(step, "on_fail", None)
    gate = getattr(step, "gate", None)
    targets = {on_fail} | ({gate.on_approve, gate.on_kill} if gate is not None else set())
    return target in targets


def _rewind(started: set[int], done: set[int], k: int) -> None:
    for j in [j for j in started if j >= k]:
        started.discard(j)
        done.discard(j)


async def _settle(inflight: dict[int, asyncio.Task[str | None]]) -> None:
    """Let every step still in flight finish (its failure, if any, is its own record's)."""
    if inflight:
        await workflow.wait(list(inflight.values()))
    for task in inflight.values():
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a second failure is not "never retrieved"
    inflight.clear()
