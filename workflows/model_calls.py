"""How workflows run ``call_model``: timeouts and retry policy stated once, per role.

Every option comes from the run's ``CallOptions`` (its input), never from the worker that happens
to run the workflow task, so two differently configured workers schedule the same commands.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.call_model import CALL_MODEL
    from activities.errors import NON_RETRYABLE_TYPES
    from workflows.call_options import CallOptions
    from workflows.model_types import CallModelInput, ModelResponse

__all__ = ["MODEL_RETRY_POLICY", "START_TO_CLOSE", "call_model"]

# Bounded transport retries: the 6th failed attempt fails the call.
MODEL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=6,
    non_retryable_error_types=NON_RETRYABLE_TYPES,
)
START_TO_CLOSE = timedelta(minutes=15)
"""One attempt's limit (a shorter schedule-to-close wins)."""


async def call_model(
    input: CallModelInput, options: CallOptions, **overrides: Any
) -> ModelResponse:
    """Run one logical model call as an activity and return its normalized result."""
    schedule_to_close = options.schedule_to_close(input.request.role)
    activity_options: dict[str, Any] = {
        "start_to_close_timeout": min(START_TO_CLOSE, schedule_to_close),
        "schedule_to_close_timeout": schedule_to_close,
        "heartbeat_timeout": options.heartbeat_timeout(),
        "retry_policy": MODEL_RETRY_POLICY,
        "summary": f"{input.phase}/{input.index}",
        "task_queue": options.task_queue_for(input.request.model),
        **overrides,
    }
    return await workflow.execute_activity(
        CALL_MODEL, input, result_type=ModelResponse, **activity_options
    )
