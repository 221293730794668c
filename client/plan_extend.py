"""New limits for a plan run from ``ponder extend`` / ``ponder plan extend`` flags.

Every limit that can pause a plan run can be extended: ``--calls``, ``--wall-ms``, ``--tokens``
(input and output together: a plan has one token limit) and ``--usd``, each absolute or ``+N``
added to the run's current limit (read from its status). The split token flags of a
tournament's budget name limits a plan does not have, so they are refused with the flag to
use.
"""

from __future__ import annotations

from pydantic import ValidationError

from activities.errors import ConfigError
from client.budget_extend import new_limit
from workflows.inputs import describe_errors
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanBudgetStatus

__all__ = ["plan_limits"]


def plan_limits(
    current: PlanBudgetStatus | None,
    *,
    calls: str | None = None,
    wall_ms: str | None = None,
    tokens: str | None = None,
    usd: str | None = None,
    input_tokens: str | None = None,
    output_tokens: str | None = None,
) -> ExtendPlanBudgetInput:
    if input_tokens is not None or output_tokens is not None:
        raise ConfigError(
            "option.invalid",
            "a plan run has one token limit, input and output together: extend it with "
            "--tokens N (or +N)",
        )
    if calls is None and wall_ms is None and tokens is None and usd is None:
        raise ConfigError(
            "option.missing",
            "extend a plan run with --calls, --wall-ms, --tokens or --usd (absolute, or +N to "
            "add to the current limit)",
        )
    b = current
    values = {
        "calls": new_limit("calls", calls, b.calls_limit if b else None, int),
        "wall_ms": new_limit("wall-ms", wall_ms, b.wall_limit_ms if b else None, int),
        "tokens": new_limit("tokens", tokens, b.tokens_limit if b else None, int),
        "usd": new_limit("usd", usd, b.usd_limit if b else None, float),
    }
    try:
        return ExtendPlanBudgetInput.model_validate(values)
    except ValidationError as exc:
        raise ConfigError("option.invalid", f"extend: {describe_errors(exc)}") from None
