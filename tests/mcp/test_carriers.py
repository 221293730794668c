"""The rounds of a carrying tool call (``client/mcp/carriers.py``), driven directly: no server,
no client, each in milliseconds."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest

from activities.errors import ConfigError, SessionGoneError
from activities.providers.sampling import SampleRequest
from client.mcp.carriers import STATE_UNKNOWN, Carriers
from client.mcp.follow import ProgressFn

REQUEST = SampleRequest("prompt", None, "hint", 10, None, timeout_s=30)
DONE = types.CallToolResult(content=[types.TextContent(text="done")])


def _answer(text: str) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text=text), model="m"
    )


async def test_a_round_carries_the_waiting_calls_and_the_retry_answers_them() -> None:
    carriers = Carriers(round_calls=8)
    finish = asyncio.Event()

    async def work(progress: ProgressFn) -> types.CallToolResult:
        await finish.wait()
        return DONE

    calls = [asyncio.create_task(carriers.sample(REQUEST)) for _ in range(2)]
    first = await carriers.carry(None, work)
    assert isinstance(first, types.InputRequiredResult) and first.input_requests
    assert first.request_state is not None
    assert len(first.input_requests) == 2  # arrived together: one round
    sent = next(iter(first.input_requests.values()))
    assert isinstance(sent, types.CreateMessageRequest) and sent.params.max_tokens == 10

    answers: dict[str, Any] = {key: _answer(key) for key in first.input_requests}
    finish.set()
    last = await carriers.resume(None, first.request_state, answers)
    assert last is DONE
    assert {r.content.text for r in await asyncio.gather(*calls)} == set(answers)  # type: ignore[union-attr]
    assert not carriers  # the call ended


async def test_when_the_last_carrier_ends_a_waiting_call_fails_session_gone_at_once() -> None:
    carriers = Carriers(round_calls=8)

    async def work(progress: ProgressFn) -> types.CallToolResult:
        return DONE

    first = await carriers.carry(None, work)
    assert first is DONE
    call = asyncio.create_task(carriers.sample(REQUEST))
    finish = asyncio.Event()

    async def slow(progress: ProgressFn) -> types.CallToolResult:
        await finish.wait()
        return DONE

    held = await carriers.carry(None, slow)
    assert isinstance(held, types.InputRequiredResult) and held.request_state is not None
    finish.set()
    # Its retry answers nothing: the call goes back, and with no carrier left it fails.
    assert await carriers.resume(None, held.request_state, {}) is DONE
    with pytest.raises(SessionGoneError):
        await asyncio.wait_for(call, 5)


async def test_an_unknown_request_state_is_refused() -> None:
    with pytest.raises(ConfigError) as refused:
        await Carriers(round_calls=8).resume(None, "forged", None)
    assert refused.value.code == STATE_UNKNOWN
