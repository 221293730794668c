"""One ``extend`` for every run whose budget is ``BudgetLimits`` (tournaments, campaigns).

``ponder extend ID`` and ``ponder campaign extend ID`` both come here: the new limits from
``--calls/--usd/--input-tokens/--output-tokens`` (absolute, or ``+N`` added to the current
limit), sent as the ``extend_budget`` update, the result printed with ``format_limits``. A
refusal (below what is spent, not a number) is one line and exit 2.
"""

from __future__ import annotations

import click
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from activities.errors import ConfigError
from client.tournament_display import format_limits
from workflows.budget import BudgetLimits
from workflows.names import UPDATE_EXTEND_BUDGET
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult

__all__ = ["extend_budget", "new_limit", "new_limits", "require_a_limit"]


def require_a_limit(*values: str | None) -> None:
    if all(v is None for v in values):
        raise ConfigError(
            "option.missing",
            "extend needs at least one new limit: give --calls, --usd, --input-tokens or "
            "--output-tokens (a plan run: --calls, --usd, --tokens or --wall-ms), absolute or "
            "+N to add",
        )


def new_limit(
    name: str, value: str | None, current: float | None, cast: type
) -> float | int | None:
    """An absolute limit, or ``+N`` added to the current one (``--name`` names it in errors)."""
    if value is None:
        return None
    try:
        if value.startswith("+"):
            return cast(current or 0) + cast(value[1:])  # type: ignore[no-any-return]
        return cast(value)  # type: ignore[no-any-return]
    except ValueError:
        raise ConfigError(
            "option.invalid", f"extend: --{name} {value!r} is not a number: give e.g. 300 or +50"
        ) from None


def new_limits(
    current: BudgetLimits,
    *,
    calls: str | None = None,
    usd: str | None = None,
    input_tokens: str | None = None,
    output_tokens: str | None = None,
) -> ExtendBudgetInput:
    return ExtendBudgetInput.model_validate(
        {
            "max_calls": new_limit("calls", calls, current.max_calls, int),
            "max_usd": new_limit("usd", usd, current.max_usd, float),
            "max_input_tokens": new_limit(
                "input-tokens", input_tokens, current.max_input_tokens, int
            ),
            "max_output_tokens": new_limit(
                "output-tokens", output_tokens, current.max_output_tokens, int
            ),
        }
    )


async def extend_budget(handle: WorkflowHandle, new: ExtendBudgetInput) -> ExtendBudgetResult:
    """Send the update; print ``budget now max_calls=6, ...`` on stderr."""
    try:
        done: ExtendBudgetResult = await handle.execute_update(
            UPDATE_EXTEND_BUDGET, new, result_type=ExtendBudgetResult
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise ConfigError(
            "budget.extend_refused", f"extend refused: {getattr(cause, 'message', cause)}"
        ) from None
    click.echo(f"budget now {format_limits(done.budget)}", err=True)
    return done
