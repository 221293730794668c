"""A one-activity workflow around the real ``call_model``: tests of the activity's own
behaviour (its errors, its cancellation) without the retry and routing of Ask or Tournament."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.call_model import CALL_MODEL, ModelActivities
from activities.config import Settings
from activities.model_types import CallModelInput, ModelResponse


@workflow.defn(name="CallModelOnce")
class CallModelOnce:
    """Runs ``call_model`` with a 30 s schedule-to-close and a 2 s heartbeat timeout (so a
    cancellation reaches it within a few seconds), and reports how it failed."""

    @workflow.run
    async def run(self, input: CallModelInput) -> dict[str, Any]:
        try:
            await workflow.execute_activity(
                CALL_MODEL,
                input,
                result_type=ModelResponse,
                schedule_to_close_timeout=timedelta(seconds=30),
                heartbeat_timeout=timedelta(seconds=2),
                retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(0.1)),
            )
        except ActivityError as exc:
            cause = exc.cause
            if not isinstance(cause, ApplicationError):
                raise
            return {
                "type": cause.type,
                "non_retryable": cause.non_retryable,
                "details": cause.details,
            }
        return {"type": None}


@contextlib.asynccontextmanager
async def call_worker(client: Client, settings: Settings, queue: str) -> AsyncIterator[None]:
    async with (
        httpx.AsyncClient() as http,
        Worker(
            client,
            task_queue=queue,
            workflows=[CallModelOnce],
            activities=[ModelActivities(settings, http).call_model],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ),
    ):
        yield
