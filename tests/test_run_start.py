"""Starting a run from a process that runs a worker for its queue: the server hands the first
workflow task back in the start's answer (eager start), no poll round trip before it begins."""

from __future__ import annotations

import uuid

from temporalio.client import Client

from activities.config import Settings
from client.runs import start_run
from client.session import Session
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK


async def test_a_run_started_beside_its_worker_starts_eagerly(
    client: Client, settings: Settings
) -> None:
    queue = f"test-{uuid.uuid4()}"
    session = Session(client, settings.model_copy(update={"task_queue": queue}), embedded=True)
    async with running_worker(client, session.settings, WorkerOptions(task_queue=queue)):
        run_id = f"ask-{uuid.uuid4().hex[:12]}"
        payload = AskInput(question="q", model="sim:default", run_id=run_id)
        handle = await start_run(session, ASK, payload, run_id, AskResult)
        assert (await handle.result()).response.text
    first = (await handle.fetch_history()).events[0]
    assert first.workflow_execution_started_event_attributes.eager_execution_accepted
