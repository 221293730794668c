"""How a run's model calls are scheduled: part of the run's input, never a worker setting.

Routing and timeouts shape the commands a workflow sends, so they come from the input (and so
from history): every worker that runs, continues or replays a run schedules the same commands,
whatever flags it was started with. ``ponder worker --rate-limit P=N/s`` serves provider P's
calls on ``provider_task_queue(queue, P)``; the client that starts a run sees that queue polled
and names it in ``provider_queues``, where the run keeps it.

Queue names belong to the workers: input may name only a queue of that form
(``<queue>.provider.<P>`` for provider ``P``), never an arbitrary one, and a routed call that no
worker picks up within ``UNROUTABLE_AFTER_S`` fails with ``provider.unroutable`` unless a worker
polls the queue (``workflows/model_calls.py``). Every time limit here has a ceiling
(``workflows/bounds.py``).

``session_queues`` routes a provider served by an interactive session (``mcp:``, sampled from
the host of a connected ``ponder mcp``) to ``<queue>.session.<secret>.<P>``: a call there that no
worker takes, or that finds no session, waits for one on a durable timer instead of failing.
The secret is random, kept in the ponder home of the user whose ``ponder mcp`` polls the queue
(``activities/routes.py``): a session lends its host's model, so only runs started by someone who
can read that home (its own tools, its user's CLI and scripts) may be routed there. A queue
without such a secret (``ponder.session.mcp``, guessable by anyone who can start a workflow) is
refused at decode with ``mcp.no_session``.

Pure: pydantic only.
"""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from workflows.bounds import MAX_HEARTBEAT_TIMEOUT_S, MAX_SCHEDULE_TO_CLOSE_S
from workflows.inputs import StrictModel
from workflows.ledger.types import LedgerDraw
from workflows.run_capabilities import MAX_READ_TOKENS, READ_TOKEN_PATTERN
from workflows.run_ids import check_run_id
from workflows.wire_replay import WireReplay

__all__ = [
    "DEFAULT_HEARTBEAT_TIMEOUT_S",
    "DEFAULT_SCHEDULE_TO_CLOSE_S",
    "FALLBACK_SCHEDULE_TO_CLOSE_S",
    "MAX_PROVIDER_QUEUES",
    "NO_SESSION",
    "SESSION_SECRET",
    "CallOptions",
    "provider_of",
    "provider_task_queue",
    "session_task_queue",
]

DEFAULT_HEARTBEAT_TIMEOUT_S = 30.0
DEFAULT_SCHEDULE_TO_CLOSE_S: dict[str, float] = {"judge": 20 * 60.0}
"""Per request role; every other role gets ``FALLBACK_SCHEDULE_TO_CLOSE_S``."""
FALLBACK_SCHEDULE_TO_CLOSE_S = 60 * 60.0
MAX_PROVIDER_QUEUES = 64
"""Entries of ``provider_queues``."""
_QUEUE_NAME = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")
_PROVIDER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
SESSION_SECRET = re.compile(r"[0-9a-f]{32,64}")
"""A session queue's secret: 128 to 256 random bits, in hex."""
NO_SESSION = "mcp.no_session"


def provider_task_queue(task_queue: str, provider: str) -> str:
    """The task queue whose worker rate-limits ``provider``'s calls (``ponder.provider.P``)."""
    return f"{task_queue}.provider.{provider}"


def session_task_queue(task_queue: str, provider: str, secret: str) -> str:
    """The task queue ``ponder mcp`` polls for ``provider``'s calls while it runs
    (``ponder.session.<secret>.mcp``): one per task queue and home, so any ``ponder mcp`` of
    that home serves them, a later one included."""
    return f"{task_queue}.session.{secret}.{provider}"


def _check_session_queues(queues: dict[str, str]) -> dict[str, str]:
    for provider, queue in queues.items():
        head, _, secret = queue.removesuffix(f".{provider}").rpartition(".session.")
        if (
            not _PROVIDER_NAME.fullmatch(provider)
            or not _QUEUE_NAME.fullmatch(queue)
            or not queue.endswith(f".{provider}")
            or not head
            or not SESSION_SECRET.fullmatch(secret)
        ):
            # Its own code: the run asked for someone's MCP session and has none.
            raise PydanticCustomError(
                NO_SESSION,
                f"{provider}: {queue[:80]!r} is not the session queue of a `ponder mcp`: a "
                f"session queue is '<task queue>.session.<secret>.{provider}', whose secret only "
                "the ponder home of that `ponder mcp` holds; start the run from an MCP client's "
                "tools (think, ask) or its user's `ponder` CLI, or leave calls.session_queues out",
            )
    return queues


def _check_queues(queues: dict[str, str], kind: str, what: str, polled_by: str) -> dict[str, str]:
    for provider, queue in queues.items():
        suffix = f".{kind}.{provider}"
        if (
            not _PROVIDER_NAME.fullmatch(provider)
            or not _QUEUE_NAME.fullmatch(queue)
            or not queue.endswith(suffix)
            or queue == suffix
        ):
            raise ValueError(
                f"{provider}: {queue!r} is not a {what} of provider {provider!r}: give "
                f"'<task queue>{suffix}' (what {polled_by.format(p=provider)} polls), or leave "
                "it out and let the client fill it from the workers that poll"
            )
    return queues


def provider_of(model_spec: str) -> str:
    """The provider (endpoint) name of a ``provider:model`` spec."""
    return model_spec.partition(":")[0].strip()


class CallOptions(StrictModel):
    """Scheduling of every model call of one run."""

    heartbeat_timeout_s: float = Field(
        default=DEFAULT_HEARTBEAT_TIMEOUT_S,
        ge=1.0,
        le=MAX_HEARTBEAT_TIMEOUT_S,
        description="seconds without a heartbeat before a model call is retried elsewhere",
    )
    schedule_to_close_s: float | None = Field(
        default=None,
        gt=0.0,
        le=MAX_SCHEDULE_TO_CLOSE_S,
        description="one call's whole time, retries included; default 20 min judge, 60 min others",
    )
    provider_queues: dict[str, str] = Field(
        default={},
        max_length=MAX_PROVIDER_QUEUES,
        description="provider name -> task queue of the worker that rate-limits its calls "
        "(<queue>.provider.<name>); the client fills it from the queues polled when the run "
        "starts",
    )
    replay: WireReplay | None = Field(
        default=None,
        description="answer every call from a recorded run's raw events (wire replay)",
    )

    session_queues: dict[str, str] = Field(
        default={},
        max_length=MAX_PROVIDER_QUEUES,
        description="provider name -> task queue a `ponder mcp` session serves "
        "(<queue>.session.<secret>.<name>, the secret from that session's ponder home); a call "
        "there waits for a session instead of failing",
    )
    read_tokens: dict[str, str] = Field(
        default={},
        max_length=MAX_READ_TOKENS,
        description="run id -> that run's read token (its directory's read-token file), for "
        "every other run this input reads (a replay model, from_checkpoint, replay); the client "
        "fills it from the run store",
    )
    ledger: LedgerDraw | None = Field(
        default=None,
        description="a shared ledger ([ledgers.NAME] on the worker) every paid call draws on "
        "before it is made, with its draw token (the client reads it from the token file)",
    )

    @field_validator("provider_queues")
    @classmethod
    def _rate_limit_queues_only(cls, queues: dict[str, str]) -> dict[str, str]:
        return _check_queues(
            queues, "provider", "rate-limit queue", "`ponder worker --rate-limit {p}=N/s`"
        )

    @field_validator("session_queues")
    @classmethod
    def _session_queues_only(cls, queues: dict[str, str]) -> dict[str, str]:
        return _check_session_queues(queues)

    @field_validator("read_tokens")
    @classmethod
    def _read_tokens(cls, tokens: dict[str, str]) -> dict[str, str]:
        for run_id, token in tokens.items():
            check_run_id(run_id)
            if not re.fullmatch(READ_TOKEN_PATTERN, token):
                raise ValueError(
                    f"{run_id}: a read token is 32 lower-case hex characters (the run "
                    "directory's read-token file), not what was given"
                )
        return tokens

    def task_queue_for(self, model_spec: str) -> str | None:
        """The queue ``model_spec``'s calls go to; None: the workflow's own queue."""
        provider = provider_of(model_spec)
        return self.session_queues.get(provider) or self.provider_queues.get(provider)

    def awaits_session(self, model_spec: str) -> bool:
        """Whether ``model_spec``'s calls wait for a session rather than fail unserved."""
        return provider_of(model_spec) in self.session_queues

    def heartbeat_timeout(self) -> timedelta:
        return timedelta(seconds=self.heartbeat_timeout_s)

    def schedule_to_close(self, role: str) -> timedelta:
        seconds = self.schedule_to_close_s or DEFAULT_SCHEDULE_TO_CLOSE_S.get(
            role, FALLBACK_SCHEDULE_TO_CLOSE_S
        )
        return timedelta(seconds=seconds)
