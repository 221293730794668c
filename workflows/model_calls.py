"""How workflows run ``call_model``: timeouts, retry policy, long waits and failure codes, once.

Every option comes from the run's ``CallOptions`` (its input), never from the worker that happens
to run the workflow task, so two differently configured workers schedule the same commands.

A provider that asks for a pause longer than the activity can wait (a quota that resets in an
hour) makes the activity fail with ``provider.retry_later`` and ``{"retry_after_s": seconds}``;
the call then waits on a durable timer (``on_wait`` tells the caller until when) and runs again
as the same logical call (same call id, billed once by the caller).

A call routed to a provider's rate-limit queue (``calls.provider_queues``) must start within
``UNROUTABLE_AFTER_S``; when it does not, an activity on the run's own queue asks whether any
worker polls that queue. If one does (the queue is busy, not dead) the call is scheduled again
with no start limit; if none does, the call fails with ``provider.unroutable`` (no call waits an
hour on a queue nobody serves).

A call on a session queue (``calls.session_queues``: ``mcp:`` models, answered by the host of a
connected ``ponder mcp``) must start within ``SESSION_START_S``. When nothing polls the queue, or
the worker that took it found no session (``provider.session_gone``), the call waits on a durable
timer (``on_wait`` is told ``provider.session_gone``), backing off through ``SESSION_WAIT_S``, and
is scheduled again: a session that connects later picks it up. It gives up once its
schedule-to-close has passed since it was first scheduled, failing ``provider.session_gone`` with
that limit whichever way its last try failed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

with workflow.unsafe.imports_passed_through():
    from workflows.activity_contracts import CALL_MODEL, QUEUE_POLLED
    from workflows.bounds import SESSION_START_S, SESSION_WAIT_S, UNROUTABLE_AFTER_S
    from workflows.call_options import CallOptions
    from workflows.ledger.waits import LedgerRoom, ledger_refusal
    from workflows.model_types import CallModelInput, ModelResponse
    from workflows.provider_errors import (
        NON_RETRYABLE_TYPES,
        RETRY_LATER_TYPE,
        ModelTimeoutError,
        SessionGoneError,
        TransportError,
    )

__all__ = [
    "MAX_PROVIDER_WAIT",
    "MAX_PROVIDER_WAITS",
    "MODEL_RETRY_POLICY",
    "PROVIDER_RETRY_LATER",
    "PROVIDER_SESSION_GONE",
    "PROVIDER_TIMEOUT",
    "PROVIDER_TRANSPORT",
    "PROVIDER_UNROUTABLE",
    "START_TO_CLOSE",
    "call_failure",
    "call_model",
    "failed_transport_retries",
    "retry_later_delay",
]

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

# The codes come from the one error tree, so a run's failure code and the activity's agree.
PROVIDER_RETRY_LATER = RETRY_LATER_TYPE
PROVIDER_TIMEOUT = ModelTimeoutError("").error_type
PROVIDER_TRANSPORT = TransportError("").error_type
PROVIDER_SESSION_GONE = SessionGoneError("").error_type
PROVIDER_UNROUTABLE = "provider.unroutable"
"""A routed call no worker picked up, and no worker polls its queue."""
MAX_PROVIDER_WAITS = 10
"""Long waits one logical call may make before its ``provider.retry_later`` fails the run."""
MAX_PROVIDER_WAIT = timedelta(hours=24)
"""The longest single wait, whatever the provider asks for."""

OnWait = Callable[[datetime | None, str], None]
"""Told the resume time and why (``provider.retry_later``, ``provider.session_gone``) when a call
starts waiting on the provider, None when it goes on."""


def _not_started(exc: ActivityError) -> bool:
    cause = exc.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START


async def _polled(task_queue: str) -> bool:
    """Whether a worker polls ``task_queue`` (asked on the run's own queue); unknown is no."""
    try:
        return await workflow.execute_activity(
            QUEUE_POLLED,
            task_queue,
            result_type=bool,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=3),
            summary=f"is {task_queue} polled?",
        )
    except ActivityError:
        return False


def retry_later_delay(exc: BaseException) -> timedelta | None:
    """How long the provider asked to wait, if ``exc`` is a ``provider.retry_later`` failure."""
    cause = exc.cause if isinstance(exc, ActivityError) else None
    if not isinstance(cause, ApplicationError) or cause.type != PROVIDER_RETRY_LATER:
        return None
    details = cause.details[0] if cause.details else None
    seconds = details.get("retry_after_s") if isinstance(details, dict) else None
    if not isinstance(seconds, int | float) or not math.isfinite(seconds):
        return timedelta(seconds=60)  # asked to come back later without a time: a minute
    return min(timedelta(seconds=max(float(seconds), 1.0)), MAX_PROVIDER_WAIT)


def _session_gone(exc: ActivityError) -> bool:
    cause = exc.cause
    return isinstance(cause, ApplicationError) and cause.type == PROVIDER_SESSION_GONE


def call_failure(exc: ActivityError) -> tuple[str, str]:
    """``(code, message)`` of a failed model call: the one mapping every workflow uses."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type, cause.message
    if isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START:
        return PROVIDER_UNROUTABLE, (
            f"no worker started the call within {UNROUTABLE_AFTER_S:g}s and none polls the "
            "provider queue calls.provider_queues routes it to: start `ponder worker "
            "--rate-limit PROVIDER=N/s` on this task queue, or start the run without the route"
        )
    if isinstance(cause, TimeoutError):
        return PROVIDER_TIMEOUT, f"no answer before the activity timed out ({cause.type})"
    return PROVIDER_TRANSPORT, str(cause or exc)


def failed_transport_retries(exc: ActivityError) -> int:
    """The transport retries a failed call took, from the activity's failure details."""
    cause = exc.cause
    details = cause.details if isinstance(cause, ApplicationError) else ()
    if details and isinstance(details[0], dict):
        return int(details[0].get("transport_retries", 0))
    return 0


async def call_model(
    input: CallModelInput,
    options: CallOptions,
    *,
    on_wait: OnWait | None = None,
    ledger_room: LedgerRoom | None = None,
    **overrides: Any,
) -> ModelResponse:
    """Run one logical model call as an activity and return its normalized result.

    A call its shared ledger refuses (``ledger.spent``) waits in ``ledger_room`` for the ledger
    to have room, then runs again (without one, the refusal fails the call)."""
    update: dict[str, Any] = {}
    if options.ledger is not None and input.ledger is None:
        update["ledger"] = options.ledger
    if options.replay is not None and input.replay is None:
        update["replay"] = options.replay  # the run's own routing, carried to the activity
    if options.read_tokens and input.read_tokens is None:
        needed = _read_tokens(input.request.model, options)
        if needed:  # only the ones this call reads: each copy enters history
            update["read_tokens"] = needed
    if input.chain is None:  # whose run directory this is (activities/run_store.py)
        update["chain"] = workflow.info().first_execution_run_id
    if update:  # one copy, and none for a caller that set both
        input = input.model_copy(update=update)
    schedule_to_close = options.schedule_to_close(input.request.role)
    routed = options.task_queue_for(input.request.model)
    activity_options: dict[str, Any] = {
        "start_to_close_timeout": min(START_TO_CLOSE, schedule_to_close),
        "schedule_to_close_timeout": schedule_to_close,
        "heartbeat_timeout": options.heartbeat_timeout(),
        "retry_policy": MODEL_RETRY_POLICY,
        "summary": f"{input.phase}/{input.index}",
        "task_queue": routed,
        **overrides,
    }
    session = options.awaits_session(input.request.model)
    if routed is not None:  # a queue input names: it must prove that a worker serves it
        start_within = SESSION_START_S if session else UNROUTABLE_AFTER_S
        activity_options["schedule_to_start_timeout"] = timedelta(seconds=start_within)
    waits = 0
    session_waits = 0
    session_shown = False
    """Whether ``on_wait`` shows a session wait: kept through the next attempt's wait to start
    (so status says so the whole time), cleared once the call goes on or fails."""
    first_scheduled = workflow.now()

    def settled() -> None:
        if session_shown and on_wait is not None:
            on_wait(None, PROVIDER_SESSION_GONE)

    while True:
        told = ledger_room.told if ledger_room is not None else 0
        try:
            response = await workflow.execute_activity(
                CALL_MODEL, input, result_type=ModelResponse, **activity_options
            )
            settled()
            return response
        except ActivityError as exc:
            refused = ledger_refusal(exc) if ledger_room is not None else None
            if refused is not None and ledger_room is not None:
                if await ledger_room.wait(*refused, told):
                    continue
                raise
            if session and (_not_started(exc) or _session_gone(exc)):
                delay = await _session_delay(exc, routed, session_waits)
                if workflow.now() + (delay or timedelta()) - first_scheduled > schedule_to_close:
                    settled()  # it waited its whole schedule-to-close for a session
                    _no_session_in_time(exc, schedule_to_close)
                if delay is None:
                    continue  # a session's worker polls, only busy: schedule it again
                session_waits += 1
                if on_wait is not None:
                    on_wait(workflow.now() + delay, PROVIDER_SESSION_GONE)
                    session_shown = True
                await workflow.sleep(delay, summary=f"waiting for an MCP session: {input.call_key}")
                continue
            settled()
            if routed is not None and _not_started(exc):
                if not await _polled(routed):
                    raise  # provider.unroutable (call_failure)
                del activity_options["schedule_to_start_timeout"]  # served, only busy: wait
                continue
            delay = retry_later_delay(exc)
            if delay is None or waits >= MAX_PROVIDER_WAITS:
                raise
            waits += 1
        if on_wait is not None:
            on_wait(workflow.now() + delay, PROVIDER_RETRY_LATER)
        closed = False
        try:
            await workflow.sleep(delay, summary=f"provider asked to wait: {input.call_key}")
        except GeneratorExit:
            # Closed with its run (evicted, or collected after its worker stopped): outside an
            # activation the workflow API raises, so the wait's end is not reported.
            closed = True
            raise
        finally:
            if on_wait is not None and not closed:
                on_wait(None, PROVIDER_RETRY_LATER)


def _read_tokens(model: str, options: CallOptions) -> dict[str, str]:
    """The read tokens a call of ``model`` may need: the run its model names (a replay
    endpoint's model is a run id, or a path, which only the worker maps to its run: then all of
    them) and the wire replay's run. Which endpoint is a replay is the worker's to know."""
    tokens = options.read_tokens
    source = model.partition(":")[2]
    if source.startswith("/"):
        return dict(tokens)
    wanted = {source} | ({options.replay.run_id} if options.replay is not None else set())
    return {run_id: tokens[run_id] for run_id in sorted(wanted) if run_id in tokens}


def _no_session_in_time(exc: ActivityError, schedule_to_close: timedelta) -> NoReturn:
    """The failure of a session call that waited out its schedule-to-close: always
    ``provider.session_gone``, whether its last try found no session or was never started."""
    gone = ApplicationError(
        f"no MCP session answered this call within its schedule-to-close "
        f"({schedule_to_close.total_seconds():g} s, calls.schedule_to_close_s): connect a host "
        "that allows sampling to a `ponder mcp` of this task queue (a 2026-07-28 host: call a "
        "tool with wait: true), then start the run again",
        type=PROVIDER_SESSION_GONE,
        non_retryable=True,
    )
    final = ActivityError(
        exc.message,
        scheduled_event_id=exc.scheduled_event_id,
        started_event_id=exc.started_event_id,
        identity=exc.identity,
        activity_type=exc.activity_type,
        activity_id=exc.activity_id,
        retry_state=exc.retry_state,
    )
    raise final from gone  # the cause is what call_failure reads the code and message from


async def _session_delay(exc: ActivityError, queue: str | None, waits: int) -> timedelta | None:
    """How long a session queue's call waits before its next try; None: go again at once (the
    call was not started, but a worker polls the queue: it is busy, not gone)."""
    if _not_started(exc) and queue is not None and await _polled(queue):
        return None
    first, ceiling = SESSION_WAIT_S
    return timedelta(seconds=min(first * 2**waits, ceiling))
