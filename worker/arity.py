"""A signal or update with the wrong number of arguments is refused with a code, never left
failing the workflow task or answered with a Python ``TypeError``.

``temporal workflow signal`` and ``temporal workflow update execute`` send one argument per
``--input`` (none without one). The SDK decodes them and calls the handler with all of them.
Every control handler takes one raw argument with a default (``raw: RawValue = NO_INPUT``) and
decodes it itself, so no input and input that does not decode are its own coded refusals
(``input.invalid``); what is left is a *count* the handler cannot bind, which would raise
``TypeError`` inside the workflow task (a signal: the task fails and is retried forever; an
update: the caller gets the raw ``TypeError`` text). This interceptor catches that count:

- a signal is handed to the workflow's ``refuse_signal(name, message)`` when it has one (the
  run records ``control.refused``, as for a signal whose content it refuses), else dropped with
  a warning;
- an update is rejected by its validator step with ``ApplicationError(type="input.invalid")``
  (nothing enters history); a handler without a validator fails the update the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from workflows.inputs import INPUT_INVALID

__all__ = ["ControlArity", "arity_problem"]


class ControlArity(Interceptor):
    """Worker interceptor: refuse (with a code) a signal or update whose arguments its handler
    cannot take."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _ArityInbound


class _ArityInbound(WorkflowInboundInterceptor):
    async def handle_signal(self, input: HandleSignalInput) -> None:
        handler = workflow.get_signal_handler(input.signal)
        problem = arity_problem(handler, input.args) if handler is not None else None
        if problem is None:
            await super().handle_signal(input)
            return
        refuse = getattr(workflow.instance(), "refuse_signal", None)
        if callable(refuse):
            refuse(input.signal, f"signal {input.signal}: {problem}")
            return
        workflow.logger.warning("dropping signal %r: %s", input.signal, problem)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        _refuse_update(input)
        super().handle_update_validator(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        _refuse_update(input)
        return await super().handle_update_handler(input)


def _refuse_update(input: HandleUpdateInput) -> None:
    handler = workflow.get_update_handler(input.update)
    problem = arity_problem(handler, input.args) if handler is not None else None
    if problem is not None:
        raise ApplicationError(
            f"{INPUT_INVALID}: update {input.update}: {problem}",
            type=INPUT_INVALID,
            non_retryable=True,
        )


def arity_problem(handler: Callable[..., Any], args: Any) -> str | None:
    """Why ``handler`` cannot take ``args``, said for someone typing ``--input`` flags."""
    try:
        inspect.signature(handler).bind(*args)
    except TypeError:
        count = len(args)
        given = "no input" if count == 0 else f"{count} inputs"
        return f"{given} given: pass exactly one JSON object (one --input)"
    return None
