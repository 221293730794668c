"""The nested ledgers of a plan run (docs/plans.md, "Sub-flows and nested budgets"): a step's own, a
fan-out's, a sub-flow's.

Pure, serializable (workflow state and ``status``). Three ledgers cover an invocation, innermost
first: the **step** ledger (the step's ``budget``; a chain member's is its fan-out's), the
**sub-flow** ledger (the enclosing ``run`` step's ``budget``) and the **run** ledger (the plan's,
``ledger.PlanLedger``). The arithmetic is one set of rules for all of them:

- **reserve** before a boundary its worst case, innermost first (``check``): a step or sub-flow
  ledger that cannot fit it refuses at once (``Exhausted``: ``step-budget-exhausted`` /
  ``subflow-budget-exhausted``, nothing dispatched, never retried); the run ledger is asked last
  and pauses instead, so no one is asked to pay for a boundary a nested cap refuses. A step
  ledger reserves one *occurrence* of its step (``w`` invocations: the first run, a gate's redo,
  a re-run after revise), a fan-out's its region, a sub-flow's each child boundary (or, by the
  reference's rule below, each call);
- **spend** one invocation per dispatch in every covering ledger, inside what it holds (past it
  is ``BudgetInvariantViolated``); the rest is released when the boundary closes;
- **settle** tokens, USD and wall clock after each invocation into every covering ledger, even
  past a limit (the call happened, and its output is kept). A ledger at or over ``tokens`` /
  ``usd`` refuses the next call in its scope (``before_call``), retries included: ``tokens`` and
  ``usd`` stop the next call, ``calls`` and ``wall_ms`` are hard.

Nested ledgers live for the run (an author's structure, not the operator's money:
``extend_budget`` extends the run ledger only), with two rules of the reference that runs
started before them replay without (``per_dispatch``, set at preflight):

- a human gate's revise gives every step it resets a **fresh step ledger** (``fresh``): the
  revised work starts over, while the sub-flow's and the run's ledgers keep counting (a step
  re-run after a model gate's redo still spends in the same one);
- a **sub-flow ledger reserves per dispatch**: one invocation and its stage timeout before each
  call, not each child's worst case, so a ``budget: {calls: 2}`` flow of a one-call step and a
  ``max_attempts: 2`` step runs both when the second succeeds first time, and fails
  ``subflow-budget-exhausted`` only at the call that would overrun it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from workflows.plan.boundaries import Reservation, occurrence, stage_timeout_ms
from workflows.plan.flows import scoped
from workflows.plan.ledger import BudgetInvariantViolated
from workflows.plan.model import AgentStep, FanoutStep, GateStep, LedgerBudget, Plan, RunStep
from workflows.plan.reasons import Reason

__all__ = ["Exhausted", "LedgerScope", "Ledgers", "NestedLedger"]

LedgerScope = Literal["step", "subflow"]


class NestedLedger(BaseModel):
    owner: str
    """The scoped id of the step whose ``budget`` this is."""
    scope: LedgerScope
    limits: LedgerBudget
    calls: int = 0
    tokens: int = 0
    usd: float = 0.0
    wall_ms: int = 0
    held: int | None = None
    """Invocations left in the open reservation (None: nothing held)."""
    per_dispatch: bool = False
    """Reserves one invocation before each call instead of holding a boundary's worst case."""

    def refusal(self, res: Reservation) -> str | None:
        """Why this ledger cannot reserve ``res`` now, or None."""
        stop = self.stop()
        if stop is not None:
            return stop
        limits = self.limits
        if limits.calls is not None and res.invocations > limits.calls - self.calls:
            return (
                f"{res.invocations} invocation(s) needed and {limits.calls - self.calls} of "
                f"calls={limits.calls} left"
            )
        if limits.wall_ms is not None and res.wall_ms > limits.wall_ms - self.wall_ms:
            return (
                f"{res.wall_ms} ms of wall clock needed and {limits.wall_ms - self.wall_ms} of "
                f"wall_ms={limits.wall_ms} left"
            )
        return None

    def stop(self) -> str | None:
        """Why the next call is refused by what was settled (tokens, USD), or None."""
        limits = self.limits
        if limits.tokens is not None and self.tokens >= limits.tokens:
            return f"{self.tokens} tokens spent of tokens={limits.tokens}"
        if limits.usd is not None and self.usd >= limits.usd:
            return f"{self.usd:.6f} USD spent of usd={limits.usd:g}"
        return None

    def hold(self, res: Reservation) -> None:
        if not self.per_dispatch:
            self.held = res.invocations

    def release(self) -> None:
        self.held = None

    def spend(self, step_id: str) -> None:
        if self.per_dispatch:  # the call was reserved just before it (``Ledgers.before_call``)
            self.calls += 1
            return
        if self.held is None or self.held <= 0:
            where = "with nothing held" if self.held is None else "past what it holds"
            raise BudgetInvariantViolated(
                f"step {step_id!r} tried to spend in the {self.scope} ledger of {self.owner!r} "
                f"{where}: the reservation arithmetic is wrong; this is a failure, never a pause"
            )
        self.held -= 1
        self.calls += 1

    def settle(self, *, tokens: int, usd: float, wall_ms: int) -> None:
        self.tokens += max(0, tokens)
        self.usd += max(0.0, usd)
        self.wall_ms += max(0, wall_ms)


@dataclass(frozen=True)
class Exhausted:
    """A nested ledger refused: the reason its scope fails with, and why."""

    owner: str
    scope: LedgerScope
    detail: str

    @property
    def reason(self) -> Reason:
        return (
            Reason.STEP_BUDGET_EXHAUSTED
            if self.scope == "step"
            else Reason.SUBFLOW_BUDGET_EXHAUSTED
        )

    def message(self, step_id: str) -> str:
        what = "step" if self.scope == "step" else "sub-flow"
        return (
            f"{step_id}: the {what} ledger of {self.owner!r} is exhausted ({self.detail}); "
            "nothing was dispatched, and it is not retried"
        )


class Ledgers(BaseModel):
    """Every nested ledger of a run, and which of them cover each dispatching step."""

    nested: dict[str, NestedLedger] = Field(default_factory=dict)
    covers: dict[str, list[str]] = Field(default_factory=dict)
    """Scoped step id -> the owners of the nested ledgers its invocations spend in, innermost
    first (a chain member's is its fan-out's; a sub-flow child's own, then its run step's)."""
    call_wall_ms: dict[str, int] = Field(default_factory=dict)
    """Scoped step id -> the wall clock one of its calls reserves in a per-dispatch ledger (its
    stage timeout), for every step a sub-flow ledger covers."""
    per_dispatch: bool = False
    """The reference's rules: sub-flow ledgers reserve per dispatch, a revise gives fresh step
    ledgers (False: a run recorded before them)."""

    @classmethod
    def for_plan(cls, plan: Plan) -> Ledgers:
        ledgers = cls()
        for step in plan.steps:
            if isinstance(step, AgentStep | GateStep | FanoutStep) and step.budget.is_set():
                ledgers._add(step.id, "step", step.budget)
            if isinstance(step, AgentStep | GateStep) and step.budget.is_set():
                ledgers.covers[step.id] = [step.id]
            elif isinstance(step, FanoutStep) and step.budget.is_set():
                for member in step.fanout.chain:
                    ledgers.covers[member] = [step.id]
            elif isinstance(step, RunStep) and step.flow in plan.flows:
                if step.budget.is_set():
                    ledgers._add(step.id, "subflow", step.budget)
                for child in plan.flows[step.flow].steps:
                    if not isinstance(child, AgentStep | GateStep):
                        continue  # a set child dispatches nothing: no ledger covers it
                    sid = scoped(step.id, child.id)
                    owners = [sid] if child.budget.is_set() else []
                    if child.budget.is_set():
                        ledgers._add(sid, "step", child.budget)
                    owners += [step.id] if step.budget.is_set() else []
                    if owners:
                        ledgers.covers[sid] = owners
                    if step.budget.is_set():
                        ledgers.call_wall_ms[sid] = stage_timeout_ms(child)
        return ledgers

    def reference_rules(self) -> None:
        """Switch on the reference's rules (a run started after them): see the docstring."""
        self.per_dispatch = True
        for ledger in self.nested.values():
            ledger.per_dispatch = ledger.scope == "subflow"

    def fresh(self, step_ids: Iterable[str]) -> list[str]:
        """A fresh step ledger for each of ``step_ids`` (a revise resets them), and for the
        children of any ``run`` step among them; sub-flow ledgers keep what they spent.
        Returns the owners whose ledgers were renewed. A no-op for runs recorded before it."""
        if not self.per_dispatch:
            return []
        reset = set(step_ids)
        renewed = []
        for owner, ledger in self.nested.items():
            body = owner.split("/", 1)[0] in reset and "/" in owner
            if ledger.scope == "step" and (owner in reset or body):
                self.nested[owner] = NestedLedger(owner=owner, scope="step", limits=ledger.limits)
                renewed.append(owner)
        return renewed

    def _add(self, owner: str, scope: LedgerScope, limits: LedgerBudget) -> None:
        self.nested[owner] = NestedLedger(owner=owner, scope=scope, limits=limits)

    def own(self, sid: str) -> NestedLedger | None:
        """The step's own ledger (a chain member has none: it spends in its fan-out's)."""
        ledger = self.nested.get(sid)
        return ledger if ledger is not None and ledger.scope == "step" else None

    def for_boundary(
        self,
        sid: str,
        scope: str | None,
        step: AgentStep | GateStep | FanoutStep | object,
        res: Reservation,
    ) -> tuple[list[tuple[str, Reservation]], list[tuple[str, Reservation]]]:
        """(what to check, innermost first; what the boundary itself holds) before boundary
        ``sid`` in ``scope`` (the enclosing run step, or None) reserving ``res``. A step's own
        ledger is checked for its first occurrence here and held by each occurrence
        (``Dispatcher.invoke``); a fan-out's and a sub-flow's are held by the boundary."""
        checks: list[tuple[str, Reservation]] = []
        holds: list[tuple[str, Reservation]] = []
        if isinstance(step, AgentStep | GateStep) and self.own(sid) is not None:
            checks.append((sid, occurrence(step)))
        if isinstance(step, FanoutStep) and sid in self.nested:
            checks.append((sid, res))
            holds.append((sid, res))
        if scope is not None and scope in self.nested:
            if self.nested[scope].per_dispatch:  # only the boundary's first call, checked here
                first = Reservation(min(res.invocations, 1), self.call_wall_ms.get(sid, 0))
                checks.append((scope, first if res.invocations > 0 else res))
            else:
                checks.append((scope, res))
                holds.append((scope, res))
        return checks, holds

    def check(self, needs: Iterable[tuple[str, Reservation]]) -> Exhausted | None:
        """The first ledger, innermost first, that cannot reserve what it is asked for."""
        for owner, res in needs:
            ledger = self.nested.get(owner)
            why = ledger.refusal(res) if ledger is not None else None
            if ledger is not None and why is not None:
                return Exhausted(owner, ledger.scope, why)
        return None

    def room_beside(
        self, owner: str | None, res: Reservation, beside: Iterable[Reservation]
    ) -> bool:
        """Whether ``owner``'s ledger (a sub-flow's) holds ``res`` beside the worst cases of
        the children already in flight in its body (``beside``), so that what they may still
        spend together never passes what is left. Without such a ledger, or with nothing
        beside, it is for ``check`` to say."""
        ledger = self.nested.get(owner) if owner is not None else None
        others = list(beside)
        if ledger is None or not others:
            return True
        calls = res.invocations + sum(r.invocations for r in others)
        wall = res.wall_ms + sum(r.wall_ms for r in others)
        return ledger.refusal(Reservation(calls, wall)) is None

    def hold(self, needs: Sequence[tuple[str, Reservation]]) -> list[str]:
        """Hold each reservation (already checked); returns the owners to release."""
        held = []
        for owner, res in needs:
            ledger = self.nested.get(owner)
            if ledger is not None:
                ledger.hold(res)
                held.append(owner)
        return held

    def release(self, owners: Iterable[str]) -> None:
        for owner in owners:
            ledger = self.nested.get(owner)
            if ledger is not None:
                ledger.release()

    def before_call(self, sid: str) -> Exhausted | None:
        """A covering ledger whose tokens or USD are spent refuses the next call, and so does a
        per-dispatch ledger without room for this one call."""
        for owner in self.covers.get(sid, []):
            ledger = self.nested[owner]
            if ledger.per_dispatch:
                why = ledger.refusal(Reservation(1, self.call_wall_ms.get(sid, 0)))
            else:
                why = ledger.stop()
            if why is not None:
                return Exhausted(owner, ledger.scope, why)
        return None

    def spend(self, sid: str) -> None:
        for owner in self.covers.get(sid, []):
            self.nested[owner].spend(sid)

    def settle(self, sid: str, *, tokens: int, usd: float, wall_ms: int) -> None:
        for owner in self.covers.get(sid, []):
            self.nested[owner].settle(tokens=tokens, usd=usd, wall_ms=wall_ms)
