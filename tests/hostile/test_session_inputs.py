"""Newer inputs, sent as a stranger would: MCP sampling's ``calls.session_queues``
and ``mcp:<hint>`` models, and the tournament's ``rounds``. Each run ends with its code at once
through the real ``temporal`` binary, and a probe Ask on the same worker finishes meanwhile;
``shared_worker`` asserts the worker exits within 10 s of SIGTERM.
"""

from __future__ import annotations

import asyncio
import time

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from workflows.names import ASK, TOURNAMENT

QUICK = {"task": "Sort a list in place.", "profile": "quick"}

# (workflow type, id, input, code, what the message names)
REFUSED = [
    (
        ASK,
        "session-queue-any",
        {"question": "q", "calls": {"session_queues": {"mcp": "ponder"}}},
        "mcp.no_session",
        "mcp: 'ponder' is not the session queue of a `ponder mcp`",
    ),
    (
        ASK,
        "hint-with-space",
        {"question": "q", "model": "mcp:bad hint!"},
        "provider.config",
        "the hint after mcp: must be 1-64 letters",
    ),
    (
        ASK,
        "mcp-without-session",
        {"question": "q", "model": "mcp:x"},
        "mcp.no_session",
        "reached a worker with no MCP session",
    ),
    (
        TOURNAMENT,
        "rounds-unknown",
        QUICK | {"rounds": "bogus"},
        "input.invalid",
        "rounds: Input should be 'barrier' or 'pipelined'",
    ),
    (TOURNAMENT, "rounds-number", QUICK | {"rounds": 7}, "input.invalid", "rounds: "),
]


async def test_session_and_rounds_inputs_end_coded_at_once(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        began = time.monotonic()
        for workflow_type, workflow_id, value, _, _ in REFUSED:
            await worker.start(workflow_type, workflow_id, dumps(value))
        await worker.probe()
        errors = await asyncio.gather(
            *(worker.failure(workflow_id, within=30) for _, workflow_id, _, _, _ in REFUSED)
        )
        assert time.monotonic() - began < 45
        for (_, workflow_id, _, code, needle), error in zip(REFUSED, errors, strict=True):
            assert error.type == code, (workflow_id, error)
            assert needle in error.message, (workflow_id, error.message)
        await worker.probe()
