"""How workflows run ``call_model``: timeouts and retry policy stated once, per role."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.call_model import CALL_MODEL
    from activities.errors import NON_RETRYABLE_TYPES
    from activities.model_types import CallModelInput, ModelResponse
    from workflows.call_defaults import CALL_DEFAULTS

__all__ = ["MODEL_RETRY_POLICY", "call_model"]

# Bounded transport retries: the 6th failed attempt fails the call.
MODEL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=6,
    non_retryable_error_types=NON_RETRYABLE_TYPES,
)
SCHEDULE_TO_CLOSE = {"judge": timedelta(minutes=20)}
DEFAULT_SCHEDULE_TO_CLOSE = timedelta(minutes=60)


async def call_model(input: CallModelInput, **overrides: Any) -> ModelResponse:
    """Run one logical model call as an activity and return its normalized result."""
    options: dict[str, Any] = {
        "start_to_close_timeout": timedelta(minutes=15),
        "schedule_to_close_timeout": SCHEDULE_TO_CLOSE.get(
            input.request.role, DEFAULT_SCHEDULE_TO_CLOSE
        ),
        "heartbeat_timeout": CALL_DEFAULTS.heartbeat_timeout,
        "retry_policy": MODEL_RETRY_POLICY,
        "summary": f"{input.phase}/{input.index}",
        "task_queue": CALL_DEFAULTS.task_queue_for(input.request.model),
        **overrides,
    }
    return await workflow.execute_activity(CALL_MODEL, input, result_type=ModelResponse, **options)
