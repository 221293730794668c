"""The sampling provider's MCP half: the sessions ``mcp:`` calls sample from, and their worker.

While ``ponder mcp`` runs it polls the session queue of each ``mcp``-kind provider
(``ponder.session.<secret>.mcp`` for the default task queue, the secret from its ponder home:
nobody who cannot read that home can route a call to its host) with a small activity worker whose
``call_model`` is the usual one (run store, raw events, redaction, bounds) holding a
``SessionSampler``: a call there goes out to a connected session as ``sampling/createMessage``.

A session joins when it finishes the handshake (``notifications/initialized``) having declared
the sampling capability; the newest live one answers, and one whose connection is gone is
dropped at its first failed send. With none, the call fails ``provider.session_gone`` and the
run waits for a session (``workflows/model_calls.py``); when this process exits nothing polls
the queue and the run waits the same way, until any ``ponder mcp`` of this task queue with a
sampling host serves it again. Routing never depends on which session: the queue is the task
queue's and home's, so a reconnected host (a new process, a new session id) picks the calls up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio.client import Client
from temporalio.worker import Worker

from activities.call_model import ModelActivities
from activities.config import Settings
from activities.errors import ConfigError, DispatchError, ModelTimeoutError, SessionGoneError
from activities.providers.sampling import SESSION_KIND, Sample, SampleRequest
from activities.routes import SESSION_SECRET_FILE, queue_polled, session_secret
from client.mcp.carriers import Carriers
from workflows.call_options import session_task_queue

__all__ = ["MAX_SAMPLING_CALLS", "SessionSampler", "serving_sampling"]

log = logging.getLogger(__name__)

MAX_SAMPLING_CALLS = 8
"""``mcp:`` calls one ``ponder mcp`` sends its host at a time; more wait on the queue."""
POLLING_WAIT_S = 5.0
"""How long startup waits to see its own poller listed, so the first run it starts is routed."""
_GONE = (NoBackChannelError, anyio.ClosedResourceError, anyio.BrokenResourceError, EOFError)


class SessionSampler:
    """The connected sessions that can sample, newest last."""

    def __init__(self) -> None:
        self.sessions: list[ServerSession] = []
        self.carriers = Carriers(round_calls=MAX_SAMPLING_CALLS)
        """2026-07-28 sessions: their waiting tool calls (``client/mcp/carriers.py``)."""

    def carries(self, ctx: ServerRequestContext[Any], waits: bool) -> bool:
        """Whether this tool call carries ``mcp:`` calls to its host as input rounds: it waits,
        and comes from a 2026-07-28 session that allows sampling (a handshake session is sent
        ``sampling/createMessage`` itself, having joined at ``notifications/initialized``)."""
        capabilities = ctx.session.client_capabilities
        return (
            waits
            and ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS
            and capabilities is not None
            and capabilities.sampling is not None
        )

    async def on_initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        capabilities = ctx.session.client_capabilities
        if capabilities is not None and capabilities.sampling is not None:
            self.sessions.append(ctx.session)
            log.info("a sampling session connected; mcp: calls go to its host")

    async def sample(self, request: SampleRequest) -> Sample:
        while self.sessions:
            session = self.sessions[-1]
            try:
                result = await session.send_request(
                    types.CreateMessageRequest(
                        params=types.CreateMessageRequestParams.model_validate(
                            request.wire(), by_alias=True
                        )
                    ),
                    types.CreateMessageResult,
                    request_read_timeout_seconds=request.timeout_s,
                )
            except _GONE:
                self.sessions.remove(session)
                continue
            except TimeoutError:
                raise ModelTimeoutError(
                    f"the MCP host did not answer sampling/createMessage within "
                    f"{request.timeout_s:g}s"
                ) from None
            except MCPError as exc:  # the host answered with an error: it refused, or failed
                raise DispatchError(
                    f"the MCP host refused sampling/createMessage: {exc}"[:500]
                ) from None
            return _sample_of(result)
        if await self.carriers.present():  # a 2026-07-28 session's waiting tool call
            return _sample_of(await self.carriers.sample(request))
        raise SessionGoneError(
            "no MCP session that allows sampling is connected to this `ponder mcp`: connect a "
            "host whose client allows sampling; the run waits for one"
        )


def _sample_of(result: types.CreateMessageResult | types.CreateMessageResultWithTools) -> Sample:
    content = result.content
    blocks = content if isinstance(content, list) else [content]
    only = blocks[0] if len(blocks) == 1 else None
    return Sample(
        text=only.text if isinstance(only, types.TextContent) else None,
        model=result.model,
        stop_reason=str(result.stop_reason) if result.stop_reason else None,
        content_type=only.type if only is not None else "content list",
    )


@contextlib.asynccontextmanager
async def serving_sampling(
    client: Client, settings: Settings, sampler: SessionSampler
) -> AsyncIterator[list[str]]:
    """Poll the session queue of every ``mcp``-kind provider until the block exits."""
    names = [name for name, e in sorted(settings.providers.items()) if e.kind == SESSION_KIND]
    secret = await asyncio.to_thread(session_secret, settings.home, create=True) if names else ""
    if secret is None:
        raise ConfigError(
            "config.unreadable",
            f"{settings.home / SESSION_SECRET_FILE} does not hold a session secret (32 to 64 hex "
            "digits, readable by this user): delete it and start `ponder mcp` again",
        )
    queues = [session_task_queue(settings.task_queue, name, secret) for name in names]
    async with httpx.AsyncClient(timeout=None) as http:
        model = ModelActivities(settings, http, sampler=sampler)
        workers = [
            Worker(
                client,
                task_queue=queue,
                activities=[model.call_model],
                max_concurrent_activities=MAX_SAMPLING_CALLS,
            )
            for queue in queues
        ]
        tasks = [asyncio.create_task(w.run()) for w in workers]
        try:
            await _until_listed(client, queues)
            yield queues
        finally:
            await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
            await asyncio.gather(*tasks, return_exceptions=True)


async def _until_listed(client: Client, queues: list[str]) -> None:
    deadline = time.monotonic() + POLLING_WAIT_S
    for queue in queues:
        while not await queue_polled(client, queue) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
