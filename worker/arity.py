"""A signal with the wrong number of arguments is dropped, not left failing the workflow task.

``temporal workflow signal`` sends one argument per ``--input`` (none without one). The SDK
decodes them and calls the handler with all of them; a count the handler cannot take raises
``TypeError`` inside the workflow task, which then fails and is retried forever: the run is
stuck, and every later signal with it. Arguments that do not decode are already dropped by the
SDK with a warning; this does the same for a count the handler cannot bind. Updates need no such
guard: each has a validator, and a validator that cannot be called rejects the update.
"""

from __future__ import annotations

import inspect
from typing import Any

from temporalio import workflow
from temporalio.worker import (
    HandleSignalInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

__all__ = ["SignalArity"]


class SignalArity(Interceptor):
    """Worker interceptor: drop (with a warning) a signal whose arguments its handler refuses."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _SignalArityInbound


class _SignalArityInbound(WorkflowInboundInterceptor):
    async def handle_signal(self, input: HandleSignalInput) -> None:
        handler = workflow.get_signal_handler(input.signal)
        if handler is not None and not _binds(handler, input.args):
            workflow.logger.warning(
                "dropping signal %r: %d arguments, its handler takes %s",
                input.signal,
                len(input.args),
                inspect.signature(handler),
            )
            return
        await super().handle_signal(input)


def _binds(handler: Any, args: Any) -> bool:
    try:
        inspect.signature(handler).bind(*args)
    except TypeError:
        return False
    return True
