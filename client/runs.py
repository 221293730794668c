"""Starting, waiting for and describing runs: shared by every ``ponder`` command."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    FailureError,
    TerminatedError,
    WorkflowAlreadyStartedError,
)
from temporalio.exceptions import (
    TimeoutError as RunTimeoutError,
)
from temporalio.service import RPCError, RPCStatusCode

from activities.config import Settings
from activities.errors import ConfigError, PonderError
from activities.run_store import RUN_ID_IN_USE
from client.call_routes import route_calls
from client.hints import ponder_program
from client.ledgers import attach_ledger
from client.read_tokens import attach_read_tokens
from client.session import (
    Session,
    keep_background_worker,
    on_sigterm,
    open_session,
    spawn_background_worker,
)

_T = TypeVar("_T")
log = logging.getLogger(__name__)

__all__ = [
    "RUN_CANCELLED",
    "RunFailed",
    "ctrl_c_detaches",
    "detach",
    "failure_message",
    "failure_parts",
    "failure_view",
    "new_run_id",
    "report_path",
    "run_result",
    "start_and_follow",
    "start_run",
    "through_restarts",
    "wait_or_detach",
]


RUN_CANCELLED = "run.cancelled"
RUN_TERMINATED = "run.terminated"
RUN_TIMED_OUT = "run.timed_out"
RUN_FAILED = "run.failed"


class RunFailed(PonderError):
    """A workflow ended failed or cancelled (exit 1); its code is what the run failed with (the
    ``ApplicationError.type`` in history, such as ``provider.auth`` or a plan reason)."""

    @classmethod
    def of(
        cls, run_id: str, exc: WorkflowFailureError, *, what: str = "run", where: str = ""
    ) -> RunFailed:
        code, message = failure_parts(exc)
        ended = "was cancelled" if code == RUN_CANCELLED else f"failed: {message}"
        return cls(code, f"{what} {run_id} {ended}{where}")


def new_run_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def start_run(
    session: Session, workflow: str, arg: Any, run_id: str, result_type: type | None = None
) -> WorkflowHandle:
    """Start ``workflow``; a live or used id is refused (Temporal's id policy is the run lock).

    Eager start: when this process runs a worker for the queue (embedded mode), the server
    hands the run's first workflow task back in the start's answer instead of through a poll.
    """
    arg = attach_read_tokens(arg, session.settings.runs_dir)  # what it reads of other runs
    arg = attach_ledger(arg, session.settings)  # --ledger NAME: its draw token
    arg = await route_calls(
        session.client, session.settings.task_queue, arg, session.routes, session.settings
    )
    try:
        handle = await session.client.start_workflow(
            workflow,
            arg,
            id=run_id,
            task_queue=session.settings.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            result_type=result_type,
            # The embedded server's only: on a cluster the first task would go to this process's
            # unversioned worker (--local-worker) past a deployment's current version.
            request_eager_start=session.embedded and not session.background,
        )
    except WorkflowAlreadyStartedError:
        raise ConfigError(
            RUN_ID_IN_USE, f"run id {run_id!r} is already used: pick another --run-id"
        ) from None
    if session.background:
        keep_background_worker(session.settings)
    return handle


async def start_and_follow(
    settings: Settings,
    workflow: str,
    arg: Any,
    run_id: str,
    result_type: type,
    follow: Callable[[Session, WorkflowHandle], Awaitable[_T]],
    *,
    detach: bool,
) -> _T:
    """``ponder <kind> run``: start the run, then ``follow`` it; with ``detach`` print its id
    and exit 0 instead (in embedded mode a background worker carries it on)."""
    async with open_session(settings, worker=not detach) as session:
        handle = await start_run(session, workflow, arg, run_id, result_type)
        if detach:
            if session.embedded:
                spawn_background_worker(settings)
            click.echo(run_id)
            sys.exit(0)
        return await follow(session, handle)


def failure_parts(exc: WorkflowFailureError) -> tuple[str, str]:
    """The code and message of the domain failure under ``exc``: the ``ApplicationError``'s
    type (the code in history), else what ended the run (cancelled, terminated, timed out)."""
    cause: BaseException | None = exc.cause
    while isinstance(cause, FailureError) and not isinstance(cause, ApplicationError):
        if cause.cause is None:
            break
        cause = cause.cause
    if isinstance(cause, CancelledError):
        return RUN_CANCELLED, "cancelled"
    if isinstance(cause, ApplicationError) and cause.type:
        return cause.type, cause.message
    if isinstance(cause, TerminatedError):
        return RUN_TERMINATED, str(cause) or "terminated"
    if isinstance(cause, RunTimeoutError):
        return RUN_TIMED_OUT, str(cause) or "timed out"
    return RUN_FAILED, str(cause)


def failure_view(exc: WorkflowFailureError) -> dict[str, str]:
    """How a run that ended badly shows in a status view: its state, code and message."""
    code, _ = failure_parts(exc)
    state = "cancelled" if code == RUN_CANCELLED else "failed"
    return {"status": state, "code": code, "error": failure_message(exc)}


def failure_message(exc: WorkflowFailureError) -> str:
    """``code: message`` of the domain failure under ``exc`` (or ``cancelled``)."""
    code, message = failure_parts(exc)
    return message if code == RUN_CANCELLED else f"{code}: {message}"


@contextlib.contextmanager
def ctrl_c_detaches() -> Iterator[asyncio.Event]:
    """While waiting on a run, Ctrl-C (or SIGTERM) sets the event instead of killing the
    process: the waiter detaches and the run goes on."""
    interrupted = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, interrupted.set)
    try:
        with on_sigterm(interrupted.set):
            yield interrupted
    finally:
        loop.remove_signal_handler(signal.SIGINT)


UNAVAILABLE = (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED)
SERVER_RESTART_WAIT_S = 120.0
"""How long a waiting command retries through a server that does not answer: an embedded
server is restarted by the lease holders' watchdog within seconds."""


DISCONNECTED = ("transport", "tcp connect")
"""How a dropped or refused connection surfaces as UNKNOWN (tonic's and hyper's wording): a
server that is down, as UNAVAILABLE is."""


def unavailable(exc: RPCError) -> bool:
    """Whether ``exc`` says the server does not answer (it may be restarting)."""
    if exc.status in UNAVAILABLE:
        return True
    return exc.status == RPCStatusCode.UNKNOWN and any(d in exc.message for d in DISCONNECTED)


async def through_restarts(call: Callable[[], Awaitable[_T]]) -> _T:
    """``call()``, retried while the server is unavailable (it restarts; runs are in SQLite)."""
    deadline = time.monotonic() + SERVER_RESTART_WAIT_S
    while True:
        try:
            return await call()
        except RPCError as exc:
            if not unavailable(exc) or time.monotonic() > deadline:
                raise
            log.info("the server does not answer (%s: %s); retrying", exc.status, exc.message)
        await asyncio.sleep(0.5)


async def run_result(handle: WorkflowHandle) -> Any:
    """The run's result, waited for through server restarts."""
    return await through_restarts(handle.result)


def detach(session: Session, run_id: str) -> NoReturn:
    """Leave the run going (a background worker takes over in embedded mode) and exit 0."""
    if session.embedded:
        spawn_background_worker(session.settings)
    click.echo(f"\ndetached; the run goes on: {ponder_program()} watch {run_id}", err=True)
    sys.exit(0)


async def wait_or_detach(session: Session, handle: WorkflowHandle) -> Any:
    """Wait for the result; Ctrl-C detaches (the run goes on) instead of stopping the run."""
    result = asyncio.ensure_future(run_result(handle))
    with ctrl_c_detaches() as interrupted:
        interrupt = asyncio.ensure_future(interrupted.wait())
        await asyncio.wait({result, interrupt}, return_when=asyncio.FIRST_COMPLETED)
        interrupt.cancel()
    if not result.done():
        result.cancel()
        detach(session, handle.id)
    try:
        return result.result()
    except WorkflowFailureError as exc:
        raise RunFailed.of(handle.id, exc) from exc


async def report_path(settings: Settings, run_id: str, *, paused: bool) -> Path | None:
    """The run's report.html when this machine sees the worker's run store (the embedded case,
    or a shared runs_dir). An ended run wrote it before it ended; a pause is seen a moment
    before its report lands, so that waits a little."""
    path = settings.runs_dir / run_id / "report.html"
    for _ in range(30 if paused else 0):
        if path.exists():
            break
        await asyncio.sleep(0.1)
    return path if path.exists() else None
