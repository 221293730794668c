"""Sizes and numbers, and routing: hostile input that overran them, through the real
``temporal`` binary against a real worker process. Each hostile run ends with its code within a
bounded time, a probe Ask on the same worker finishes within 10 s meanwhile, and the worker
exits within 10 s of SIGTERM (``shared_worker`` asserts that on leaving the block).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from workflows.bounds import UNROUTABLE_AFTER_S
from workflows.names import ASK, TOURNAMENT

QUICK = {"task": "Sort a list in place.", "profile": "quick"}

# (workflow type, id, input, what the refusal names): each used to start and then build 1e11
# characters on the event loop, spend infinity, or fail 32 s later with "Integer exceeds 64-bit".
REFUSED_AT_DECODE = [
    (ASK, "sim-chars", {"question": "q", "model": "sim:default,chars=100000000000"}, "chars="),
    (
        TOURNAMENT,
        "prices-huge",
        QUICK | {"prices": {"sim:default": {"input": 1e308, "output": 1e308}}},
        "prices.sim:default.input: Input should be less than or equal to 1000",
    ),
    (
        TOURNAMENT,
        "prices-negative",
        QUICK | {"prices": {"sim:default": {"input": -1e308, "output": -1e308}}},
        "prices.sim:default.input: Input should be greater than or equal to 0",
    ),
    (ASK, "seed-1e38", {"question": "q", "seed": 1e38}, "AskInput: seed: "),
    (ASK, "seed-10-38", {"question": "q", "seed": 10**38}, "seed: Input should be less than"),
    (ASK, "tokens-1e30", {"question": "q", "max_output_tokens": 1e30}, "max_output_tokens: "),
    (
        ASK,
        "tokens-10-30",
        {"question": "q", "max_output_tokens": 10**30},
        "max_output_tokens: Input should be less than or equal to 1000000",
    ),
    (TOURNAMENT, "seed-2-70", QUICK | {"seed": 2**70}, "seed: Input should be less than"),
    (
        ASK,
        "nobody-polls",
        {"question": "q", "calls": {"provider_queues": {"sim": "nobody-polls-this"}}},
        "calls.provider_queues: Value error, sim: 'nobody-polls-this' is not a rate-limit queue",
    ),
]


async def test_the_issues_sizes_and_numbers_are_refused_at_once(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        began = time.monotonic()
        for workflow_type, workflow_id, value, _ in REFUSED_AT_DECODE:
            await worker.start(workflow_type, workflow_id, dumps(value))
        await worker.probe()
        errors = await asyncio.gather(
            *(worker.failure(workflow_id, within=15) for _, workflow_id, _, _ in REFUSED_AT_DECODE)
        )
        assert time.monotonic() - began < 30
        for (_, workflow_id, _, needle), error in zip(REFUSED_AT_DECODE, errors, strict=True):
            assert error.type == "input.invalid", (workflow_id, error)
            assert needle in error.message, (workflow_id, error.message)
        assert not list(settings.runs_dir.glob("sim-chars*"))  # refused before any activity
        await worker.probe()


@pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)
async def test_a_call_routed_to_a_queue_nobody_polls_fails_unroutable(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        routed = {"provider_queues": {"sim": f"{worker.queue}.provider.sim"}}
        await worker.start(ASK, "unroutable", dumps({"question": "q", "calls": routed}))
        await worker.probe()  # while the routed call waits for a worker that never comes
        error = await worker.failure("unroutable", within=UNROUTABLE_AFTER_S + 30)
        assert error.type == "provider.unroutable"
        await worker.probe()
