"""A run whose worker stopped is closed by the garbage collector (``GeneratorExit``, in whatever
thread it runs): a step's bookkeeping after its wait must not call the workflow API then."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.collector import close_like_the_collector
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from tests.plans.run_helpers import agent, plan_doc, start
from worker.worker import WorkerOptions, running_worker
from workflows.plan_run import boundary_run


async def test_a_step_in_flight_can_be_closed_outside_its_worker(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    local = with_endpoint(settings, "fake", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    fake.hold()  # the step's call stays in flight until the worker has stopped
    try:
        # No grace: shutdown cancels the held call instead of waiting for it.
        options = WorkerOptions(task_queue=queue, graceful_shutdown=timedelta(0))
        async with running_worker(client, local, options):
            handle = await start(client, queue, plan_doc(agent("a", "Say hi.", model="fake:m")))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not fake.seen:
                assert loop.time() < deadline, "the step's call never reached the provider"
                await asyncio.sleep(0.05)
    finally:
        fake.resume()
    try:  # raised "Not in workflow event loop" from the step's cleanup
        close_like_the_collector(boundary_run.run_boundary, "run", handle.id)
    finally:
        await handle.terminate("test over")
