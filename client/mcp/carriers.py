"""Sampling for 2026-07-28 sessions: a waiting tool call carries the ``mcp:`` calls as input rounds.

At protocol 2026-07-28 a server may not send a request of its own, not even within a client's
request: the SDK refuses ``send_request`` (``NoBackChannelError``) on every modern connection,
and there is no ``notifications/initialized`` to join a session at. What it may do (SEP-2322) is
answer a ``tools/call`` with an ``InputRequiredResult`` holding ``sampling/createMessage``
requests; the client samples and calls the tool again with the answers (``inputResponses``) and
the ``requestState`` it was given, until the tool returns its real result.

So a tool call that waits (``wait: true``) from a session that declared the sampling capability
is a *carrier*: its work (starting a run, waiting for its end) runs as a task that outlives each
round, and each round waits for whichever comes first, the work's result or ``mcp:`` calls
waiting on this process's session queue. Calls go out as one ``InputRequiredResult`` (the batch
that arrived within ``BATCH_S``), with ``requestState`` naming the carrier: a random token that
only this process knows, so a retry finds its carrier and nothing else. A carrier whose client
does not come back within the calls' timeout plus ``ROUND_GRACE_S`` is abandoned: its work is
cancelled (the run goes on in Temporal), the calls it held go to another carrier, else fail
``provider.session_gone`` and the run waits for a session as it does with none connected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from activities.errors import ConfigError, ModelTimeoutError, SessionGoneError
from activities.providers.sampling import SampleRequest
from client.mcp.follow import ProgressFn

__all__ = ["BATCH_S", "CARRIER_WAIT_S", "ROUND_GRACE_S", "Carriers"]

log = logging.getLogger(__name__)

BATCH_S = 0.2
"""After the first waiting call, how long a round waits for its siblings (a phase's calls are
scheduled together), so they go out in one round: a host's client caps the rounds of one tool
call (the Python SDK's ``input_required_max_rounds``, 10 by default)."""
ROUND_GRACE_S = 30.0
"""How long past its calls' timeout a carrier waits for its client's next round."""
CARRIER_WAIT_S = 10.0
"""How long an ``mcp:`` call that finds no session waits for a carrier before it fails
``provider.session_gone``: a host calls its tools one after another, and a run's waiting call
retries only after a durable timer (5 s, then doubling)."""
STATE_UNKNOWN = "mcp.request_state_unknown"

Work = Callable[[ProgressFn], Coroutine[Any, Any, types.CallToolResult]]


@dataclass(eq=False)
class _Ask:
    """One ``mcp:`` call waiting for a carrier, and its answer."""

    request: SampleRequest
    answer: asyncio.Future[types.CreateMessageResult | types.CreateMessageResultWithTools]
    key: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(eq=False)
class _Carrier:
    """One waiting tool call across its rounds."""

    ctx: Any
    """The current round's request context (progress goes to it)."""
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    work: asyncio.Task[types.CallToolResult] | None = None
    sent: dict[str, _Ask] = field(default_factory=dict)
    abandon: asyncio.TimerHandle | None = None

    async def progress(self, done: float, total: float | None, message: str) -> None:
        await self.ctx.session.report_progress(done, total, message)


class Carriers:
    """The waiting tool calls of 2026-07-28 sessions, and the ``mcp:`` calls waiting for one."""

    def __init__(self, round_calls: int) -> None:
        self.round_calls = round_calls
        """``sampling/createMessage`` requests one ``InputRequiredResult`` holds at most."""
        self._carriers: dict[str, _Carrier] = {}
        self._waiting: list[_Ask] = []
        self._arrived = asyncio.Event()
        self._present = asyncio.Event()
        """Set while any carrier is."""

    def __bool__(self) -> bool:
        return bool(self._carriers)

    async def present(self, timeout: float = CARRIER_WAIT_S) -> bool:
        """Whether a carrier is there, or comes within ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._present.wait(), timeout)
        return bool(self._carriers)

    async def sample(
        self, request: SampleRequest
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
        """Wait for a carrier to take ``request`` to its host and bring the answer back."""
        ask = _Ask(request, asyncio.get_running_loop().create_future())
        self._waiting.append(ask)
        self._arrived.set()
        try:
            return await asyncio.wait_for(asyncio.shield(ask.answer), request.timeout_s)
        except TimeoutError:
            raise ModelTimeoutError(
                f"the MCP host did not answer sampling/createMessage within {request.timeout_s:g}s"
            ) from None
        finally:
            if not ask.answer.done():  # timed out or cancelled: no carrier takes it any more
                ask.answer.cancel()
            with contextlib.suppress(ValueError):
                self._waiting.remove(ask)

    async def carry(self, ctx: Any, work: Work) -> types.CallToolResult | types.InputRequiredResult:
        """The first round of a waiting tool call: start its work, then carry calls."""
        carrier = _Carrier(ctx)
        carrier.work = asyncio.create_task(work(carrier.progress))
        self._carriers[carrier.token] = carrier
        self._present.set()
        return await self._round(carrier)

    async def resume(
        self, ctx: Any, state: str, answers: dict[str, Any] | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A later round: hand its answers to the calls they answer, then carry on."""
        carrier = self._carriers.get(state)
        if carrier is None:
            raise ConfigError(
                STATE_UNKNOWN,
                "this tool call's requestState names no waiting call of this server (it ended, "
                "was abandoned, or belongs to another ponder mcp)",
                fix="call the tool again without requestState; `result` with wait: true "
                "follows a run that is already going",
            )
        if carrier.abandon is not None:
            carrier.abandon.cancel()
            carrier.abandon = None
        carrier.ctx = ctx
        sent, carrier.sent = carrier.sent, {}
        for key, ask in sent.items():
            answer = (answers or {}).get(key)
            if isinstance(answer, types.CreateMessageResult | types.CreateMessageResultWithTools):
                if not ask.answer.done():
                    ask.answer.set_result(answer)
            else:  # left unanswered (or answered as something else): someone else takes it
                self._give_back(ask)
        return await self._round(carrier)

    async def _round(self, carrier: _Carrier) -> types.CallToolResult | types.InputRequiredResult:
        assert carrier.work is not None
        taking = asyncio.create_task(self._take())
        try:
            await asyncio.wait({carrier.work, taking}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # this round was cancelled (the client went away): so is the call
            taking.cancel()
            self._end(carrier)
            raise
        if carrier.work.done():
            if taking.done():  # taken just as the work ended: back to the queue
                for ask in taking.result():
                    self._give_back(ask)
            else:  # still waiting, nothing taken yet
                taking.cancel()
            self._end(carrier)
            return carrier.work.result()
        asks = taking.result()
        carrier.sent = {ask.key: ask for ask in asks}
        wait_s = max(ask.request.timeout_s for ask in asks) + ROUND_GRACE_S
        carrier.abandon = asyncio.get_running_loop().call_later(
            wait_s, self._abandon, carrier.token
        )
        return types.InputRequiredResult(
            input_requests={
                ask.key: types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams.model_validate(
                        ask.request.wire(), by_alias=True
                    )
                )
                for ask in asks
            },
            request_state=carrier.token,
        )

    async def _take(self) -> list[_Ask]:
        """The next batch of waiting calls: the first, and those that arrive within BATCH_S."""
        while True:
            if not any(not ask.answer.done() for ask in self._waiting):
                self._arrived.clear()
                await self._arrived.wait()
                continue
            await asyncio.sleep(BATCH_S)
            live = [ask for ask in self._waiting if not ask.answer.done()][: self.round_calls]
            if live:  # no await from here on: another carrier cannot take the same ones
                for ask in live:
                    self._waiting.remove(ask)
                return live

    def _give_back(self, ask: _Ask) -> None:
        if ask.answer.done():
            return
        if self._carriers:
            self._waiting.append(ask)
            self._arrived.set()
        else:
            ask.answer.set_exception(_gone())

    def _end(self, carrier: _Carrier) -> None:
        if self._carriers.pop(carrier.token, None) is None:
            return
        if carrier.abandon is not None:
            carrier.abandon.cancel()
        if carrier.work is not None and not carrier.work.done():
            carrier.work.cancel()
        for ask in carrier.sent.values():
            self._give_back(ask)
        carrier.sent = {}
        if not self._carriers:  # nothing left to take the waiting calls to a host
            self._present.clear()
            for ask in self._waiting:
                if not ask.answer.done():
                    ask.answer.set_exception(_gone())

    def _abandon(self, token: str) -> None:
        carrier = self._carriers.get(token)
        if carrier is not None:
            log.info("a waiting tool call's client did not come back for its next round")
            self._end(carrier)


def _gone() -> SessionGoneError:
    return SessionGoneError(
        "the MCP session's waiting tool call ended before this sampling call was answered: "
        "call a tool with wait: true (e.g. result) from a host that allows sampling; the run "
        "waits for one"
    )
