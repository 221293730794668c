"""The plan run's budget ledger: reserve a boundary, spend inside it, extend within the cap.

Pure, and built on the one budget model (``workflows.budget.Budget``: call count, tokens, USD);
this module adds what plans need on top: the wall clock, the per-boundary reservation and the
extension cap. A serializable pydantic model, so it can live in workflow state and in ``status``.

- ``need(res)``: None when the boundary fits what is left, else the pause it calls for
  (``awaiting_budget`` / ``awaiting_wall_clock``, reason ``budget-exhausted``);
- ``open(step, res)`` / ``spend(step)`` / ``close()``: a spend outside an open reservation, or
  past it, raises ``BudgetInvariantViolated`` (a failure, never a pause);
- ``extend(calls, wall_ms, tokens, usd)``: absolute new limits; below what is spent is refused
  (``extension-below-spent``), past the cap fails (``budget-extension-exhausted`` /
  ``wall-extension-exhausted``). Tokens and USD have no cap of their own beyond the input
  ceilings (``workflows.bounds``): the work a run can do is bounded by the calls cap, and a
  token or USD limit only stops it sooner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from workflows.budget import Budget, BudgetLimits
from workflows.plan.boundaries import PlanTotals, Reservation
from workflows.plan.reasons import Reason

__all__ = ["BudgetInvariantViolated", "Extension", "Open", "PauseNeed", "PlanLedger"]


class BudgetInvariantViolated(Exception):
    """A dispatch outside its boundary's reservation: the arithmetic is wrong, so the run fails."""

    reason = Reason.BUDGET_INVARIANT_VIOLATED


@dataclass(frozen=True)
class PauseNeed:
    state: Literal["awaiting_budget", "awaiting_wall_clock"]
    reason: Reason
    detail: str


class Open(BaseModel):
    step_id: str
    invocations_left: int
    wall_ms: int


class Extension(BaseModel):
    calls: int | None = None
    wall_ms: int | None = None
    tokens: int | None = None
    usd: float | None = None


class PlanLedger(BaseModel):
    budget: Budget = Field(default_factory=Budget)
    max_tokens: int | None = None
    wall_limit_ms: int
    wall_spent_ms: int = 0
    calls_cap: int
    wall_cap_ms: int
    active: Open | None = None
    extensions: list[Extension] = Field(default_factory=list)

    @classmethod
    def start(
        cls,
        totals: PlanTotals,
        *,
        calls: int | None = None,
        wall_ms: int | None = None,
        tokens: int | None = None,
        usd: float | None = None,
    ) -> PlanLedger:
        """A ledger with the run's limits (overrides, else the plan's totals). The caps come
        from the plan alone, so an override cannot raise its own ceiling."""
        limits = BudgetLimits(max_calls=calls if calls is not None else totals.calls, max_usd=usd)
        return cls(
            budget=Budget(limits=limits),
            max_tokens=tokens,
            wall_limit_ms=wall_ms if wall_ms is not None else totals.wall_ms,
            calls_cap=totals.calls_cap,
            wall_cap_ms=totals.wall_cap_ms,
        )

    @property
    def calls_limit(self) -> int:
        limit = self.budget.limits.max_calls
        return 0 if limit is None else limit

    def calls_left(self) -> int:
        return self.calls_limit - self.budget.spent.calls

    def wall_left_ms(self) -> int:
        return self.wall_limit_ms - self.wall_spent_ms

    def need(self, step_id: str, res: Reservation) -> PauseNeed | None:
        spent = self.budget.spent
        if res.invocations > 0:
            if res.invocations > self.calls_left():
                return PauseNeed(
                    "awaiting_budget",
                    Reason.BUDGET_EXHAUSTED,
                    f"step {step_id!r} reserves {res.invocations} invocation(s) and "
                    f"{self.calls_left()} of {self.calls_limit} are left: extend calls to at "
                    f"least {spent.calls + res.invocations}",
                )
            tokens = spent.input_tokens + spent.output_tokens
            if self.max_tokens is not None and tokens >= self.max_tokens:
                return PauseNeed(
                    "awaiting_budget",
                    Reason.BUDGET_EXHAUSTED,
                    f"{tokens} tokens spent of {self.max_tokens}: raise the token limit "
                    f"(extend tokens above {tokens})",
                )
            usd = self.budget.limits.max_usd
            if usd is not None and spent.usd >= usd:
                return PauseNeed(
                    "awaiting_budget",
                    Reason.BUDGET_EXHAUSTED,
                    f"{spent.usd:.4f} USD spent of {usd:g}: raise the USD limit (extend usd "
                    f"above {spent.usd:.4f})",
                )
        if res.wall_ms > self.wall_left_ms():
            return PauseNeed(
                "awaiting_wall_clock",
                Reason.BUDGET_EXHAUSTED,
                f"step {step_id!r} reserves {res.wall_ms} ms of wall clock and "
                f"{self.wall_left_ms()} of {self.wall_limit_ms} ms are left: extend wall_ms to "
                f"at least {self.wall_spent_ms + res.wall_ms}",
            )
        return None

    def open(self, step_id: str, res: Reservation) -> None:
        if self.active is not None:
            raise BudgetInvariantViolated(
                f"boundary {step_id!r} opened while {self.active.step_id!r} is still open"
            )
        self.active = Open(step_id=step_id, invocations_left=res.invocations, wall_ms=res.wall_ms)

    def spend(self, step_id: str) -> None:
        """Spend one invocation inside the open reservation."""
        active = self.active
        if active is None or active.invocations_left <= 0:
            where = "with no open reservation" if active is None else "past its reservation"
            raise BudgetInvariantViolated(
                f"step {step_id!r} tried to dispatch {where} "
                f"({'none' if active is None else active.step_id}): the reservation arithmetic "
                "is wrong; this is a failure, never a pause"
            )
        active.invocations_left -= 1
        self.budget.spent.calls += 1

    def spend_wall(self, ms: int) -> None:
        self.wall_spent_ms += max(0, ms)

    def close(self) -> None:
        self.active = None

    def extend(
        self,
        *,
        calls: int | None,
        wall_ms: int | None,
        tokens: int | None = None,
        usd: float | None = None,
    ) -> tuple[Reason | None, str]:
        """Apply absolute new limits; returns (None, summary) or (reason, why refused)."""
        if calls is None and wall_ms is None and tokens is None and usd is None:
            return Reason.EXTENSION_BELOW_SPENT, "give calls, wall_ms, tokens or usd"
        spent = self.budget.spent
        used_tokens = spent.input_tokens + spent.output_tokens
        if tokens is not None and tokens <= used_tokens:
            return Reason.EXTENSION_BELOW_SPENT, (
                f"tokens={tokens} is not above what is already spent ({used_tokens}, input + "
                f"output): give more than {used_tokens}"
            )
        if usd is not None and usd <= spent.usd:
            return Reason.EXTENSION_BELOW_SPENT, (
                f"usd={usd:g} is not above what is already spent ({spent.usd:.6g}): give more "
                f"than {spent.usd:.6g}"
            )
        if calls is not None:
            problems = self.budget.extension_problems(BudgetLimits(max_calls=calls))
            if problems:
                return Reason.EXTENSION_BELOW_SPENT, "; ".join(problems)
            if calls > self.calls_cap:
                return Reason.BUDGET_EXTENSION_EXHAUSTED, (
                    f"calls={calls} is over the extension cap {self.calls_cap} "
                    "(max(2 x plan total, sum of reservations))"
                )
        if wall_ms is not None:
            if wall_ms < self.wall_spent_ms:
                return Reason.EXTENSION_BELOW_SPENT, (
                    f"wall_ms={wall_ms} is below what is already spent ({self.wall_spent_ms}): "
                    f"give at least {self.wall_spent_ms}"
                )
            if wall_ms > self.wall_cap_ms:
                return Reason.WALL_EXTENSION_EXHAUSTED, (
                    f"wall_ms={wall_ms} is over the extension cap {self.wall_cap_ms} "
                    "(max(2 x plan wall, sum of wall reservations))"
                )
        if calls is not None:
            self.budget.limits.max_calls = calls
        if wall_ms is not None:
            self.wall_limit_ms = wall_ms
        if tokens is not None:
            self.max_tokens = tokens
        if usd is not None:
            self.budget.limits.max_usd = usd
        self.extensions.append(Extension(calls=calls, wall_ms=wall_ms, tokens=tokens, usd=usd))
        return None, "limits now " + self.limits_text()

    def limits_text(self) -> str:
        shown = f"calls={self.calls_limit}, wall_ms={self.wall_limit_ms}"
        if self.max_tokens is not None:
            shown += f", tokens={self.max_tokens}"
        if self.budget.limits.max_usd is not None:
            shown += f", usd={self.budget.limits.max_usd:g}"
        return shown
