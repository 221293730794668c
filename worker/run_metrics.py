"""Worker interceptor: count every run's start and end (``workflows.metrics``) around its
``run`` method, so no workflow repeats the bookkeeping and none is left out.

The outcome is what the run's code returned or raised: ``completed``, ``failed`` (a
``FailureError``, which fails the run), ``cancelled``. A continue-as-new is no end; any other
exception fails the workflow task, which is retried, so the run has not ended either. A run
terminated or timed out by the server ends without its code running and is not counted here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.exceptions import FailureError
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)
from temporalio.workflow import ContinueAsNewError

from workflows import metrics

__all__ = ["RunMetrics"]


class RunMetrics(Interceptor):
    """Worker interceptor: ``ponder_runs_started`` and ``ponder_runs_ended`` for every run."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _RunMetricsInbound


class _RunMetricsInbound(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        metrics.run_started()
        try:
            result = await super().execute_workflow(input)
        except ContinueAsNewError:
            raise
        except asyncio.CancelledError:
            metrics.run_ended("cancelled")
            raise
        except FailureError:
            metrics.run_ended("failed")
            raise
        metrics.run_ended("completed")
        return result
