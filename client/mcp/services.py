"""What ``ponder mcp``'s tools run with, made after the server is ready to answer.

The tool table's modules, the Temporal SDK and the session (a connection, the embedded server
started if it is down) and the sampling worker cost one to several seconds to make; a client
waits for none of them to ``initialize`` or list the tools (``client.mcp.tool_list``). They are
made once, in the background from the first session's handshake on (``initialized``: from then a
session can sample, so a run waiting for a sampling session is served without any tool call), and
a tool call waits for them; a failure (no server) is the call's coded error, and the next call
tries again. Over HTTP they are made before the port opens (``client.mcp.cli``): a client there
connects when it sees the port, not after a handshake it times.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import ServerRequestContext

    from activities.config import Settings
    from client.mcp.backend import Backend
    from client.mcp.sampling import SessionSampler

__all__ = ["Connect", "Services"]

Connect = Callable[[], AbstractAsyncContextManager["tuple[Backend, SessionSampler]"]]
"""Opens the session and serves the sampling queues for as long as the context lasts."""

_TOOL_MODULES = ("client.mcp.tools", "client.mcp.backend", "client.mcp.sampling", "client.session")


def _import_tool_modules() -> None:
    for name in _TOOL_MODULES:
        importlib.import_module(name)


class Services:
    def __init__(self, settings: Settings, connect: Connect) -> None:
        self.settings = settings
        self._connect = connect
        self._stack = contextlib.AsyncExitStack()
        self._making: asyncio.Future[tuple[Backend, SessionSampler]] | None = None
        self._sampler: SessionSampler | None = None
        self._joined: list[tuple[ServerRequestContext[Any], types.NotificationParams]] = []

    def start(self) -> None:
        """Begin making them in the background (idempotent)."""
        if self._making is None:
            self._making = asyncio.ensure_future(self._make())

    async def get(self) -> tuple[Backend, SessionSampler]:
        self.start()
        making = self._making
        assert making is not None
        try:
            return await asyncio.shield(making)
        except Exception:
            if self._making is making:
                self._making = None  # the next call tries again (a server that came up since)
            raise

    async def _make(self) -> tuple[Backend, SessionSampler]:
        # The imports run in a thread, so the event loop goes on answering the client meanwhile.
        await asyncio.to_thread(_import_tool_modules)
        backend, sampler = await self._stack.enter_async_context(self._connect())
        self._sampler = sampler
        for ctx, params in self._joined:  # the sessions that finished their handshake already
            await sampler.on_initialized(ctx, params)
        self._joined.clear()
        return backend, sampler

    async def on_initialized(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        """A session finished its handshake: it joins the sampler (``mcp:`` calls), now or once
        the sampler exists."""
        self.start()
        if self._sampler is None:
            self._joined.append((ctx, params))
        else:
            await self._sampler.on_initialized(ctx, params)

    async def aclose(self) -> None:
        if self._making is not None and not self._making.done():
            self._making.cancel()
            with contextlib.suppress(BaseException):
                await self._making
        await self._stack.aclose()
