"""Where a ``ponder`` command gets its client and, in embedded mode, its worker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from activities.config import Settings
from activities.errors import NoWorkerError
from client.connect import connect
from client.embedded import EmbeddedServer
from worker.worker import WorkerOptions, running_worker

__all__ = ["Session", "open_session", "spawn_background_worker"]

NO_WORKER_WAIT_S = 5.0


@dataclass
class Session:
    client: Client
    settings: Settings
    embedded: bool


async def has_worker(client: Client, task_queue: str) -> bool:
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return bool(response.pollers)


async def wait_for_worker(client: Client, task_queue: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await has_worker(client, task_queue):
        if time.monotonic() > deadline:
            raise NoWorkerError(
                f"no worker polls task queue {task_queue!r}: start `ponder worker` "
                "(or pass --local-worker to run one in this process)"
            )
        await asyncio.sleep(0.5)


@contextlib.asynccontextmanager
async def open_session(
    settings: Settings, *, local_worker: bool = False, worker: bool = True
) -> AsyncIterator[Session]:
    """A connected client; in embedded mode (no TEMPORAL_ADDRESS) with an in-process worker."""
    if settings.temporal_address:
        client = await connect(settings)
        if local_worker:
            async with running_worker(client, settings, WorkerOptions(settings.task_queue)):
                yield Session(client, settings, embedded=False)
            return
        if worker:
            await wait_for_worker(client, settings.task_queue, NO_WORKER_WAIT_S)
        yield Session(client, settings, embedded=False)
        return
    server = EmbeddedServer(settings.home)
    async with server.lease() as info:
        client = await connect(settings, info.address)
        if not worker:
            yield Session(client, settings, embedded=True)
            return
        async with running_worker(client, settings, WorkerOptions(settings.task_queue)):
            yield Session(client, settings, embedded=True)


def spawn_background_worker(settings: Settings, idle_seconds: int = 600) -> int:
    """Start ``ponder worker --embedded --exit-when-idle N`` detached; returns its pid."""
    log = (settings.home / "worker.log").open("ab")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker",
            "--embedded",
            "--exit-when-idle",
            str(idle_seconds),
            "--task-queue",
            settings.task_queue,
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        env={**os.environ, "PONDER_HOME": str(settings.home)},
    )
    # Take the child's lease now: this process may exit (and drop its own lease) before the
    # child gets to it, and the last lease out stops the server.
    EmbeddedServer(settings.home).add_lease(process.pid)
    return process.pid
