"""Scaffolding for the plan tests that see which model calls are in flight at once.

The fake provider (a real HTTP server, ``tests.fakes``) answers nothing while ``holding``: a
test starts a run on ``fake_queue`` (a worker whose ``fake:`` models are the fake), waits until
``in_flight`` counts the calls it expects, reads the run's status while they are held, and the
calls go on when the ``with`` block ends (an assert that fails inside it lets them go too, so
the run can end and its worker stop). A test file takes the fixture by name::

    from tests.plans import held_calls

    fake_queue = held_calls.fake_queue
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Replayer

from activities.config import Endpoint, Settings
from client.connect import data_converter
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from tests.plans.run_helpers import agent
from worker.worker import WORKFLOWS, WorkerOptions, running_worker

__all__ = ["KINDS", "fake_agent", "fake_queue", "holding", "in_flight", "order", "replays"]

KINDS = ("dispatched", "settled")
"""The trace events that say when a call started and ended."""


@pytest.fixture
async def fake_queue(client: Client, settings: Settings, fake: FakeProvider) -> AsyncIterator[str]:
    """A worker whose ``fake:`` models are the fake provider."""
    local = with_endpoint(settings, "fake", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, local, WorkerOptions(task_queue=queue)):
        yield queue


def fake_agent(step_id: str, **fields: object) -> dict[str, object]:
    """An agent step whose calls go to the fake provider."""
    return agent(step_id, f"Write part {step_id}.", model="fake:m") | fields


@contextlib.contextmanager
def holding(fake: FakeProvider) -> Iterator[None]:
    """The fake answers no call inside the block; the held ones are answered when it ends."""
    fake.hold()
    try:
        yield
    finally:
        fake.resume()


async def in_flight(fake: FakeProvider, count: int, timeout: float = 45) -> None:
    """Until the fake has received ``count`` calls (it answers none while holding)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(fake.seen) < count:
        assert loop.time() < deadline, f"{len(fake.seen)} call(s) in flight, not {count}"
        await asyncio.sleep(0.05)


def order(trail: list[Any]) -> list[tuple[str, str]]:
    """The run's ``dispatched`` and ``settled`` events as (kind, step), in trace order."""
    return [(e.type, e.data["step"]) for e in trail if e.type in KINDS]


async def replays(handle: WorkflowHandle[Any, Any], settings: Settings) -> None:
    """The run's history replays on this code."""
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    result = await replayer.replay_workflow(await handle.fetch_history())
    assert result.replay_failure is None
