"""``--rate-limit``: a provider's calls go to its own task queue, served at most N per second."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.call_defaults import CALL_DEFAULTS, provider_task_queue
from workflows.names import ASK


@pytest.fixture
def sim_rate_limited() -> Iterator[None]:
    CALL_DEFAULTS.rate_limited = frozenset({"sim"})
    yield
    CALL_DEFAULTS.rate_limited = frozenset()


async def test_rate_limited_provider_has_its_own_queue(
    client: Client, settings: Settings, sim_rate_limited: None
) -> None:
    queue = f"test-{uuid.uuid4()}"
    options = WorkerOptions(task_queue=queue, rate_limits={"sim": 2.0})
    async with running_worker(client, settings, options):
        started = time.monotonic()
        handles = [
            await client.start_workflow(
                ASK,
                AskInput(question=f"q{i}"),
                id=f"rl-{uuid.uuid4()}",
                task_queue=queue,
                result_type=AskResult,
            )
            for i in range(6)
        ]
        await asyncio.gather(*(h.result() for h in handles))
        elapsed = time.monotonic() - started
    assert elapsed >= 2.0  # 6 calls at 2 per second cannot all finish in under ~2.5 s
    history = await handles[0].fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled[0].activity_type.name == "call_model"
    assert scheduled[0].task_queue.name == provider_task_queue("sim")
