"""Routing and timeouts come from the run's input: two differently configured workers schedule the
same commands for the same input (the worker flags once leaked into workflow code)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from workflows.ask_types import AskInput, AskResult
from workflows.call_options import CallOptions
from workflows.names import ASK


@contextlib.asynccontextmanager
async def worker_process(settings: Settings, address: str, *flags: str) -> AsyncIterator[str]:
    """``python -m worker`` with ``flags`` on a fresh queue, as a user would start it."""
    queue = f"test-{uuid.uuid4()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env |= {
        "TEMPORAL_ADDRESS": address,
        "PONDER_HOME": str(settings.home),
        "PONDER_RUNS_DIR": str(settings.runs_dir),
        "PONDER_PAYLOAD_DIR": str(settings.payload_dir),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker",
        "--task-queue",
        queue,
        *flags,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        yield queue
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()


async def commands(client: Client, queue: str, payload: AskInput) -> list[Any]:
    """The activity commands an Ask run scheduled, with its own queue's name made neutral."""
    handle = await client.start_workflow(
        ASK, payload, id=f"opts-{uuid.uuid4()}", task_queue=queue, result_type=AskResult
    )
    await asyncio.wait_for(handle.result(), 60)
    history = await handle.fetch_history()
    scheduled = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        a = event.activity_task_scheduled_event_attributes
        scheduled.append(
            (
                a.activity_type.name,
                "<run's queue>" if a.task_queue.name == queue else a.task_queue.name,
                a.schedule_to_close_timeout.ToTimedelta(),
                a.start_to_close_timeout.ToTimedelta(),
                a.heartbeat_timeout.ToTimedelta(),
                a.retry_policy.maximum_attempts,
            )
        )
    return scheduled


async def test_differently_configured_workers_schedule_the_same_commands(
    client: Client, settings: Settings, server_address: str
) -> None:
    payload = AskInput(question="q", calls=CallOptions(heartbeat_timeout_s=7))
    async with (
        worker_process(settings, server_address) as plain,
        worker_process(
            settings,
            server_address,
            "--rate-limit",
            "sim=50/s",
            "--max-concurrent-activities",
            "3",
            "--sticky-timeout",
            "1",
        ) as limited,
    ):
        first, second = await asyncio.gather(
            commands(client, plain, payload), commands(client, limited, payload)
        )
    assert first == second
    call = first[0]
    assert call[:2] == ("call_model", "<run's queue>")  # the input names no provider queue
    assert call[4].total_seconds() == 7  # the input's heartbeat timeout, not a worker's


async def test_the_input_routes_a_provider_to_its_queue(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with worker_process(settings, server_address, "--rate-limit", "sim=50/s") as queue:
        routed = CallOptions(provider_queues={"sim": f"{queue}.provider.sim"})
        scheduled = await commands(client, queue, AskInput(question="q", calls=routed))
    assert scheduled[0][1] == f"{queue}.provider.sim"


async def test_the_worker_refuses_a_heartbeat_timeout_flag(settings: Settings) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker",
        "--heartbeat-timeout",
        "2",
        env=env | {"PONDER_HOME": str(settings.home)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert "heartbeat_timeout_s" in err.decode()  # where the setting lives now
