"""A real Temporal dev server for the session; each test runs its own worker on a uuid queue."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.config import Endpoint, Settings, load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from tests.fakes import FakeProvider
from worker.worker import WorkerOptions, running_worker

os.environ.pop("TEMPORAL_ADDRESS", None)


@pytest.fixture(scope="session")
async def dev_server() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(),
        dev_server_log_level="warn",
        ui=False,
    )
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def server_address(dev_server: WorkflowEnvironment) -> str:
    return dev_server.client.service_client.config.target_host


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    base = load_settings(home=str(tmp_path / "home"))
    return base.model_copy(update={"config_file": None})


@pytest.fixture
async def client(settings: Settings, server_address: str) -> Client:
    return await connect(settings, server_address)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


def with_endpoint(settings: Settings, name: str, endpoint: Endpoint) -> Settings:
    return settings.model_copy(update={"providers": {**settings.providers, name: endpoint}})


@pytest.fixture
async def worker_queue(client: Client, settings: Settings) -> AsyncIterator[str]:
    """A worker on a fresh task queue for this test, with this test's settings."""
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


@pytest.fixture
def no_leftover_processes(tmp_path: Path) -> Iterator[None]:
    """Whatever a test leaves running under its home (a failed assertion included) is killed."""
    from tests.test_worker_cli import processes_using

    yield
    for pid in processes_using(tmp_path) + processes_using(tmp_path / "home"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
