"""A cancel that arrives while a run writes its completion is too late: the run completes
(``workflows.completion``), and a history recorded before the patch replays as it ran: cancelled,
or completed where the old completion itself caught the cancel and wrote again (as the
tournament's artifact writer does with a cancelled write)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistory,
)
from temporalio.exceptions import ActivityError
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

from workflows.completion import complete_despite_cancel

WRITE = "completion_test_write"


class Writes:
    """The completion's writes: each starts, then waits until the test lets it finish."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    @activity.defn(name=WRITE)
    async def write(self, text: str) -> str:
        self.started.set()
        await self.release.wait()
        return f"wrote {text}"


async def _write(text: str) -> str:
    return await workflow.execute_activity(
        WRITE, text, result_type=str, start_to_close_timeout=timedelta(seconds=60)
    )


async def _write_and_wait(text: str) -> str:
    written = await _write(text)
    await workflow.wait_condition(workflow.all_handlers_finished)
    return written


async def _write_or_write_again(text: str) -> str:
    try:
        return await _write(text)
    except (asyncio.CancelledError, ActivityError):  # a cancelled write: the next is whole
        return await _write(f"{text} again")


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


@workflow.defn(name="RewritingCompletion")
class RewritingCompletion:
    @workflow.run
    async def run(self, text: str) -> str:
        return await complete_despite_cancel(_write_or_write_again(text))


@workflow.defn(name="RewritingCompletion")
class RewritingCompletionBeforeThePatch:
    @workflow.run
    async def run(self, text: str) -> str:
        return await _write_or_write_again(text)


Outcome = tuple[str, object, WorkflowHistory]


async def cancel_recorded(handle: WorkflowHandle) -> None:
    """Cancel the run and return once the request is in its history."""
    await handle.cancel()
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            return


async def _cancelled_mid_write(client: Client, workflow_class: type) -> Outcome:
    """Start a run, cancel it while its completion's write is in flight, then let the writes
    finish: the run's status, its result (or failure) and its history."""
    writes = Writes()
    queue = f"completion-{uuid.uuid4().hex[:8]}"
    name = workflow_class.__temporal_workflow_definition.name  # type: ignore[attr-defined]
    async with Worker(
        client,
        task_queue=queue,
        workflows=[workflow_class],
        activities=[writes.write],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        handle = await client.start_workflow(
            name, "summary", id=f"completion-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        await asyncio.wait_for(writes.started.wait(), 60)
        await cancel_recorded(handle)
        writes.release.set()
        try:
            outcome: object = await asyncio.wait_for(handle.result(), 60)
        except WorkflowFailureError as exc:
            outcome = exc
        status = (await handle.describe()).status
        return str(status and status.name), outcome, await handle.fetch_history()


def _markers(history: WorkflowHistory) -> int:
    return sum(e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED for e in history.events)


async def _replays(workflow_class: type, history: WorkflowHistory) -> None:
    await Replayer(workflows=[workflow_class]).replay_workflow(history)


async def test_a_cancel_during_the_completion_is_too_late(client: Client) -> None:
    status, outcome, history = await _cancelled_mid_write(client, CompletionTest)
    assert (status, outcome) == (WorkflowExecutionStatus.COMPLETED.name, "wrote summary")
    assert _markers(history) == 1  # the patch is asked when the cancel arrives, not before
    await _replays(CompletionTest, history)


async def test_a_run_recorded_before_the_patch_replays_cancelled(client: Client) -> None:
    status, outcome, history = await _cancelled_mid_write(client, CompletionBeforeThePatch)
    assert status == WorkflowExecutionStatus.CANCELED.name
    assert isinstance(outcome, WorkflowFailureError)
    # The new code, given the old history, takes the old path (no marker): it replays.
    assert _markers(history) == 0
    await _replays(CompletionTest, history)


async def test_an_old_completion_that_caught_the_cancel_replays_completed(client: Client) -> None:
    status, outcome, history = await _cancelled_mid_write(client, RewritingCompletionBeforeThePatch)
    assert (status, outcome) == (WorkflowExecutionStatus.COMPLETED.name, "wrote summary again")
    await _replays(RewritingCompletion, history)  # the cancel reaches the completion, as then
    # The same completion under the patch: the first write, the cancel too late to matter.
    status, outcome, _ = await _cancelled_mid_write(client, RewritingCompletion)
    assert (status, outcome) == (WorkflowExecutionStatus.COMPLETED.name, "wrote summary")
