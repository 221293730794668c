"""A cancel that arrives while a run writes its completion is too late: the run completes
(``workflows.completion``), and a history recorded before the patch still replays cancelled."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

from workflows.completion import complete_despite_cancel

WRITE = "completion_test_write"


class Writes:
    """The completion's write: it starts, then waits until the test lets it finish."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = 0

    @activity.defn(name=WRITE)
    async def write(self, text: str) -> str:
        self.started.set()
        await self.release.wait()
        self.finished += 1
        return f"wrote {text}"


async def _write_and_wait(text: str) -> str:
    written = await workflow.execute_activity(
        WRITE, text, result_type=str, start_to_close_timeout=timedelta(seconds=60)
    )
    await workflow.wait_condition(workflow.all_handlers_finished)
    return written


@workflow.defn(name="CompletionTest")
class CompletionTest:
    @workflow.run
    async def run(self, text: str) -> str:
        return await complete_despite_cancel(_write_and_wait(text))


@workflow.defn(name="CompletionTest")
class CompletionBeforeThePatch:
    """The same run as it was written before: the completion awaited in the run's own task."""

    @workflow.run
    async def run(self, text: str) -> str:
        return await _write_and_wait(text)


async def _cancelled_mid_write(client: Client, workflow_class: type) -> tuple[str, object]:
    """Start a run, cancel it while its completion's write is in flight, then let the write
    finish: the run's status and its history."""
    writes = Writes()
    queue = f"completion-{uuid.uuid4().hex[:8]}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[workflow_class],
        activities=[writes.write],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        handle = await client.start_workflow(
            "CompletionTest", "summary", id=f"completion-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        await asyncio.wait_for(writes.started.wait(), 60)
        await handle.cancel()
        async for event in handle.fetch_history_events(wait_new_event=True):
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
                break
        writes.release.set()
        try:
            outcome: object = await asyncio.wait_for(handle.result(), 60)
        except WorkflowFailureError as exc:
            outcome = exc
        status = (await handle.describe()).status
        assert writes.finished == 1
        return str(status and status.name), (outcome, await handle.fetch_history())


async def test_a_cancel_during_the_completion_is_too_late(client: Client) -> None:
    status, (outcome, history) = await _cancelled_mid_write(client, CompletionTest)
    assert status == WorkflowExecutionStatus.COMPLETED.name
    assert outcome == "wrote summary"
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert len(markers) == 1  # the patch is asked when the cancel arrives, not before
    await Replayer(workflows=[CompletionTest]).replay_workflow(history)


async def test_a_run_recorded_before_the_patch_replays_cancelled(client: Client) -> None:
    status, (outcome, history) = await _cancelled_mid_write(client, CompletionBeforeThePatch)
    assert status == WorkflowExecutionStatus.CANCELED.name
    assert isinstance(outcome, WorkflowFailureError)
    # The new code, given the old history, takes the old path (no marker): it replays.
    await Replayer(workflows=[CompletionTest]).replay_workflow(history)
