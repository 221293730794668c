"""A served ``ponder ask`` without the SDK: started and, when it answers at once, read over the
embedded server's HTTP API.

With the embedded server up and the configuration's background worker serving its queue, the
command is a client only, and most of its time went to importing the SDK client, httpx and the
providers (about 0.4 s of CPU for a call that takes milliseconds). Here the run starts through
the HTTP API (``client.server_http``) with the request the SDK path sends: the same workflow
type, id, queue, id policies and identity, and the input encoded as the pydantic converter
encodes it (``pydantic_core.to_json``, ``json/plain``). The command then waits a moment for the
run's close event. An answer in that moment is printed by the view the SDK path prints with
(``client.ask_view.print_answer``).

Anything else is the SDK's, as before: a configuration this path does not reproduce (a cluster,
encryption, tracing, a ledger, a rate-limited provider queue, a model whose resolution reads
files or loads a provider), a refused start (its message is the SDK path's), and a run that has
not answered in ``WAIT_S`` (a slow call, a retry), which the SDK path follows from there: the
retry lines shown meanwhile go with it, so none shows twice, and Ctrl-C or SIGTERM detaches
throughout, as it does on the SDK path. Every start of one command sends one request id, so a
start retried after a lost answer is the same start, never a second run.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from client.embedded import EmbeddedServer
from client.retry_lines import POLL_S, RetryLines, failed_attempts_in_json, to_stderr
from client.server_http import HttpUnanswered, ServerHttp, payload_data
from client.worker_fingerprint import for_configuration
from client.worker_record import running_background_worker
from workflows.call_options import provider_of, provider_task_queue
from workflows.names import ASK

if TYPE_CHECKING:
    from pydantic import BaseModel

    from activities.config import Settings
    from workflows.ask_types import AskInput, AskResult

__all__ = [
    "WAIT_S",
    "Handover",
    "ask_served",
    "close_event_within",
    "new_ask_id",
    "print_detached",
    "resolves_here",
    "served_start",
    "signalled",
]

WAIT_S = 1.0
"""How long the command waits for the close event before the SDK path follows the run."""
START_ATTEMPTS = 3
"""Starts sent (one request id) while the server's answer is lost; then the SDK path decides."""
SERVED_KINDS = ("openai", "anthropic", "sim")
"""Endpoint kinds whose resolution reads no file and needs no provider module."""
_SPEC = re.compile(r"^(?P<provider>[A-Za-z][A-Za-z0-9_.-]*):(?P<model>\S.*)$")
"""``activities.providers.registry``'s form of a model spec (a test holds them equal)."""
_REUSE = "WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE"
_CONFLICT = "WORKFLOW_ID_CONFLICT_POLICY_FAIL"
"""The SDK path's id policies (``client.runs.start_run``): a used id is refused."""


@dataclass(frozen=True)
class Handover:
    """A run this command started (or may have started) that the SDK path follows from here."""

    run_id: str
    temporal_run_id: str | None
    """None: the start's answer was lost, so whether it landed is for the SDK path to find."""
    identity: str
    input_data: bytes
    """What the start sent as the input (with ``identity``: how the SDK path knows the run)."""
    lines: RetryLines = field(default_factory=RetryLines)
    """The retry lines shown while the run was awaited here: the SDK path goes on from them."""


def new_ask_id() -> str:
    """``client.runs.new_run_id("ask")``, without loading the SDK that module starts runs with."""
    return f"ask-{uuid.uuid4().hex[:12]}"


def resolves_here(spec: str, settings: Settings) -> bool:
    """Whether ``resolve_model(spec)`` with no base URL surely passes, decided without loading
    a provider: a declared endpoint of a kind that reads no file, its key present (in the
    environment: a secrets file is left to the SDK path), and a ``sim`` model's options valid.
    False sends the command down the SDK path, which resolves (or refuses) as ever."""
    from activities.config import secrets_file_configured
    from workflows.sim_options import SimOptions, SimOptionsError

    match = _SPEC.fullmatch(spec.strip())
    if match is None or secrets_file_configured():
        return False
    endpoint = settings.providers.get(match["provider"])
    if endpoint is None or endpoint.kind not in SERVED_KINDS:
        return False
    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
        return False
    if endpoint.kind == "sim":
        try:
            SimOptions.parse(match["model"])
        except SimOptionsError:
            return False
    return True


def _plain_client(settings: Settings) -> bool:
    """Whether the SDK path's client would send what this one does: the embedded server, no
    payload codec (a keyring), no tracing headers, no ledger draw to attach."""
    from activities.config import secrets_file_configured
    from client.ledgers import COMMAND_LEDGER

    return not (
        settings.temporal_address
        or secrets_file_configured()
        or settings.keyring_file is not None
        or os.environ.get(settings.keyring_env)
        or settings.otlp_endpoint
        or COMMAND_LEDGER.get() is not None
    )


def ask_served(settings: Settings, input: AskInput) -> AskResult | Handover | None:
    """Start ``input`` over the HTTP API and wait ``WAIT_S`` for its answer: the result, a
    run for the SDK path to follow, or None when nothing started here (the SDK path starts it).

    Ctrl-C (or SIGTERM) while waiting detaches, as on the SDK path: the run goes on. After a
    hand-over one is held (``signalled``) for the follower, which detaches then."""
    providers = [provider_of(input.model)]
    return served_start(
        settings, input, input.run_id, workflow=ASK, providers=providers, wait=_answer
    )


Awaited = TypeVar("Awaited")


def served_start(
    settings: Settings,
    input: BaseModel,
    run_id: str | None,
    *,
    workflow: str,
    providers: Iterable[str],
    wait: Callable[[ServerHttp, str, str, RetryLines], Awaited | None],
) -> Awaited | Handover | None:
    """Start ``input`` as a ``workflow`` run under ``run_id`` over the HTTP API and ``wait``
    for it (``wait``: what it ended with, or None for the SDK path to follow it from there):
    that, a run for the SDK path to follow, or None when nothing started here (the SDK path
    starts it). None too when the SDK path's client would send another start (see
    ``_plain_client``), or a call of ``providers`` would go through a rate-limited provider
    queue (``client.call_routes``).

    Ctrl-C (or SIGTERM) while waiting detaches: the run goes on. After a hand-over one is held
    (``signalled``) for the follower, which detaches then."""
    if not _plain_client(settings):
        return None
    settings = for_configuration(settings)
    server = EmbeddedServer(settings.home)
    info = server.read_state()
    if info is None or not server.up() or running_background_worker(settings) is None:
        return None
    api = ServerHttp(info.http_port, settings.namespace)
    queue = settings.task_queue
    try:
        if not api.serves(queue, time.time()):
            return None
        for provider in sorted(set(providers)):
            if api.polled(provider_task_queue(queue, provider), "TASK_QUEUE_TYPE_ACTIVITY"):
                return None
    except HttpUnanswered:
        return None
    from pydantic_core import to_json

    from client.read_tokens import attach_read_tokens

    data = to_json(attach_read_tokens(input, settings.runs_dir))
    if len(data) + 64 >= settings.payload_threshold:  # kept in the payload store: the SDK's
        return None
    run_id = run_id or ""
    identity = f"{os.getpid()}@{socket.gethostname()}"  # the SDK client's default
    server.add_lease(os.getpid())  # as a session's lease: the server outlives the command
    # Ctrl-C or SIGTERM is held while the start is sent: whether it landed decides what it does.
    previous = _on_signals(_remember)
    try:
        started = _start(api, queue, run_id, identity, data, workflow=workflow)
        if started is None:
            _restore(previous)  # nothing started: a held signal acts as it would have
            return None
        handover = Handover(run_id, started or None, identity, data)
        _keep_background_worker(settings)
        if not started:
            return handover  # the follower takes the signals over, a held one included
        if signalled():
            print_detached(run_id)
        _on_signals(_raise_detached)
        try:
            ended = wait(api, run_id, started, handover.lines)
        except _Detached:
            print_detached(run_id)
        if ended is None:
            # Held until the SDK follower's event loop takes them over (``client.ask_cli``,
            # ``client.think_http.follow_handover``).
            _on_signals(_remember)
            return handover
        _restore(previous)
        return ended
    except BaseException as exc:
        _restore(previous, resend=not isinstance(exc, SystemExit))  # a detach used its signal
        raise
    finally:
        server.drop_lease(os.getpid(), settings.server_idle_s)


def _start(
    api: ServerHttp, queue: str, run_id: str, identity: str, data: bytes, *, workflow: str
) -> str | None:
    """The started run's Temporal run id; "" when no answer came (it may have started); None
    when the server refused it (the SDK path starts it again and says why)."""
    request: dict[str, Any] = {
        "workflowType": {"name": workflow},
        "taskQueue": {"name": queue},
        "input": {
            "payloads": [
                {
                    "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
                    "data": base64.b64encode(data).decode(),
                }
            ]
        },
        "identity": identity,
        "requestId": str(uuid.uuid4()),
        "workflowIdReusePolicy": _REUSE,
        "workflowIdConflictPolicy": _CONFLICT,
        "priority": {},  # the SDK sends its default priority, an empty one
    }
    for _ in range(START_ATTEMPTS):
        try:
            status, answer = api.start_workflow(run_id, request)
        except HttpUnanswered:
            continue
        if status == 200 and answer.get("runId"):
            return str(answer["runId"])
        # The id is taken: by this very start when its first answer was lost.
        details = answer.get("details", []) if isinstance(answer, dict) else []
        for detail in details:
            if isinstance(detail, dict) and detail.get("startRequestId") == request["requestId"]:
                return str(detail.get("runId") or "")
        if status < 500:
            return None
    return ""


def _keep_background_worker(settings: Settings) -> None:
    """``client.session.keep_background_worker``: the worker counted on may have released its
    record since (idle, about to exit); then one starts for the run (rare: the SDK loads then)."""
    if running_background_worker(settings) is None:
        from client.session import keep_background_worker

        keep_background_worker(settings)


def _answer(
    api: ServerHttp, run_id: str, temporal_run_id: str, lines: RetryLines
) -> AskResult | None:
    """The result of a run that completed within ``WAIT_S``; None for anything else (still
    running, failed, cancelled, a result in the payload store): the SDK path's to report.

    Meanwhile each failed attempt of its call shows as the SDK path shows it, a poll every
    ``POLL_S`` (``client.call_progress.retries_shown``, which goes on from ``lines`` after a
    hand-over)."""
    from pydantic import ValidationError

    from workflows.ask_types import AskResult

    def show_retries() -> bool:
        try:
            pending = api.describe(run_id).pending_activities
        except HttpUnanswered:
            return False
        for line in lines.lines(failed_attempts_in_json(pending, temporal_run_id)):
            to_stderr(line)
        return True

    event = close_event_within(api, run_id, temporal_run_id, WAIT_S, between=show_retries)
    if event is None or event.get("eventType") != "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED":
        return None
    attributes = event.get("workflowExecutionCompletedEventAttributes", {})
    try:
        return AskResult.model_validate_json(payload_data(attributes.get("result")))
    except (HttpUnanswered, ValidationError):
        return None


def close_event_within(
    api: ServerHttp,
    run_id: str,
    temporal_run_id: str,
    wait_s: float,
    *,
    between: Callable[[], bool],
) -> dict[str, Any] | None:
    """The run's close event if it closes within ``wait_s``, long-polled ``POLL_S`` at a time
    with ``between`` after each poll that found none (False from it, or a server error rather
    than the poll running out: None, for the SDK path to ask again)."""
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        asked = time.monotonic()
        try:
            return api.close_event(run_id, temporal_run_id, wait_s=min(POLL_S, left))
        except HttpUnanswered:
            if time.monotonic() - asked < min(POLL_S, left) / 2:
                return None  # an error, not the wait running out: the SDK path asks again
            if not between():
                return None
    return None


class _Detached(BaseException):
    """Ctrl-C or SIGTERM while the run is awaited."""


_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_signalled: list[int] = []


def _raise_detached(_signal: int, _frame: object) -> None:
    raise _Detached


def _remember(signum: int, _frame: object) -> None:
    _signalled.append(signum)


def _on_signals(handler: Callable[[int, Any], None]) -> dict[int, Any]:
    """``handler`` for Ctrl-C and SIGTERM; returns the handlers it replaced."""
    return {sig: signal.signal(sig, handler) for sig in _SIGNALS}


def _restore(previous: dict[int, Any], *, resend: bool = True) -> None:
    """The handlers ``_on_signals`` replaced back, and a signal held meanwhile sent again."""
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    held = list(_signalled)
    _signalled.clear()
    for sig in held if resend else []:
        signal.raise_signal(sig)


def signalled() -> bool:
    """Whether Ctrl-C or SIGTERM came after a hand-over, before its follower took them over:
    the follower then detaches at once."""
    return bool(_signalled)


def print_detached(run_id: str) -> NoReturn:
    """Leave the run going (the background worker carries it on) and exit 0, as
    ``client.runs.detach`` does."""
    from client.hints import ponder_program

    click.echo(f"\ndetached; the run goes on: {ponder_program()} watch {run_id}", err=True)
    raise SystemExit(0)
