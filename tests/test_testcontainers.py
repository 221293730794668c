"""Smoke test against a containerised Temporal server, when a Docker engine answers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest

from activities.config import Settings
from client.connect import connect
from client.embedded import server_answers
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK

IMAGE = "temporalio/temporal:latest"
GRPC_PORT = 7233
READY_TIMEOUT_S = 120.0


def docker_engine_problem() -> str | None:
    """None when a Docker engine answers a ping, else why not."""
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.fixture(scope="module")
def temporal_container() -> Iterator[str]:
    """``temporal server start-dev`` in a container; yields its host:port."""
    problem = docker_engine_problem()
    if problem is not None:
        reason = f"no Docker engine: {problem}"
        print(f"\nskipping the testcontainers smoke test: {reason}")
        pytest.skip(reason)
    from testcontainers.core.container import DockerContainer

    container = (
        DockerContainer(IMAGE)
        .with_command(["server", "start-dev", "--ip", "0.0.0.0"])
        .with_exposed_ports(GRPC_PORT)
    )
    with container:
        host = container.get_container_host_ip()
        yield f"{host}:{container.get_exposed_port(GRPC_PORT)}"


async def test_ask_on_a_containerised_server(temporal_container: str, settings: Settings) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not await server_answers(temporal_container):
        assert time.monotonic() < deadline, f"{IMAGE} did not answer at {temporal_container}"
        await asyncio.sleep(0.5)
    client = await connect(settings, temporal_container)
    queue = f"test-{uuid.uuid4()}"
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        result = await client.execute_workflow(
            ASK,
            AskInput(question="Does this run in a container?", run_id=run_id),
            id=run_id,
            task_queue=queue,
            result_type=AskResult,
        )
    assert result.response.simulated
    assert "[sim q=" in result.response.text
    assert (settings.runs_dir / run_id / "summary.json").exists()
