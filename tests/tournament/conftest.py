"""Tournament tests: a worker that also knows the fake OpenAI-compatible endpoint as ``local``."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from worker.worker import WorkerOptions, running_worker


@pytest.fixture
async def queue(client: Client, settings: Settings, fake: FakeProvider) -> AsyncIterator[str]:
    settings = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    )
    name = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=name)):
        yield name
