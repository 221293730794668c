"""The one budget model: limits, what is spent, and the reservation arithmetic.

Pure (no Temporal import). A call is *reserved* before dispatch, so no concurrency can overshoot
``max_calls``; tokens and USD are only known after a response, so they stop new reservations
once reached and may overshoot by at most the calls already in flight.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError

from workflows.bounds import BudgetTokens, BudgetUsd, CallCount
from workflows.inputs import StrictModel

__all__ = ["Budget", "BudgetLimits", "BudgetSpent"]


class BudgetLimits(StrictModel):
    """Absolute limits; None means unlimited."""

    max_calls: CallCount | None = Field(default=None, description="Budget: max model calls.")
    max_input_tokens: BudgetTokens | None = Field(
        default=None, description="Budget: max input tokens over the run."
    )
    max_output_tokens: BudgetTokens | None = Field(
        default=None, description="Budget: max output tokens over the run."
    )
    max_usd: BudgetUsd | None = Field(default=None, description="Budget: max USD.")


class BudgetSpent(BaseModel):
    calls: int = 0
    """Reserved logical calls: successful, failed and in flight (transport retries excluded)."""
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    transport_retries: int = 0


class Budget(BaseModel):
    limits: BudgetLimits = BudgetLimits()
    spent: BudgetSpent = BudgetSpent()

    def blocking_limit(self) -> str | None:
        """The first limit that stops a new reservation, or None."""
        limits, spent = self.limits, self.spent
        checks = (
            ("max_calls", limits.max_calls, spent.calls),
            ("max_input_tokens", limits.max_input_tokens, spent.input_tokens),
            ("max_output_tokens", limits.max_output_tokens, spent.output_tokens),
            ("max_usd", limits.max_usd, spent.usd),
        )
        for name, limit, used in checks:
            if limit is not None and used >= limit:
                return name
        return None

    def reserve(self) -> bool:
        """Reserve one call if no limit is reached."""
        if self.blocking_limit() is not None:
            return False
        self.spent.calls += 1
        return True

    def settle(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        usd: float,
        transport_retries: int,
        failed: bool = False,
    ) -> None:
        """Record what a reserved call cost; a failed call stays counted."""
        self.spent.input_tokens += input_tokens
        self.spent.output_tokens += output_tokens
        self.spent.usd += usd
        self.spent.transport_retries += transport_retries
        self.spent.failed_calls += int(failed)

    def checked_extension(self, values: dict[str, object]) -> tuple[BudgetLimits | None, list[str]]:
        """New limits from raw control input, or why they are refused (never an exception:
        a signal handler that raised would leave the workflow task retrying forever)."""
        try:
            new = BudgetLimits.model_validate(values)
        except ValidationError as exc:
            return None, [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        problems = self.extension_problems(new)
        return (None, problems) if problems else (new, [])

    def extension_problems(self, new: BudgetLimits) -> list[str]:
        """Why ``new`` limits cannot replace the current ones (each names field and fix)."""
        spent = self.spent
        problems = []
        for field, used in (
            ("max_calls", spent.calls),
            ("max_input_tokens", spent.input_tokens),
            ("max_output_tokens", spent.output_tokens),
            ("max_usd", spent.usd),
        ):
            value = getattr(new, field)
            if value is not None and value < used:
                problems.append(
                    f"{field}={value} is below what is already spent ({used:g}): "
                    f"give at least {used:g}"
                )
        return problems
