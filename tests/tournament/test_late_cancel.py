"""A real tournament cancelled while it writes its completed files completes (``workflows/
completion.py``): the final artifact write is held until the cancel is in the run's history,
then let go. Its files, its status and its history agree, and the history replays."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator

import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import Replayer

from activities.config import Settings
from activities.tournament.artifacts import WRITE_TOURNAMENT_ARTIFACTS, TournamentArtifactActivities
from tests.tournament.helpers import start
from worker.connect import data_converter
from worker.worker import WorkerOptions, running_worker
from workflows.tournament.types import TournamentSnapshot
from workflows.tournament.workflow import TournamentWorkflow


class HeldFinalWrite:
    """The completed snapshot's write waits until the test lets it go; the others run as ever."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldFinalWrite]:
    gate = HeldFinalWrite()
    real = TournamentArtifactActivities.write_tournament_artifacts

    @activity.defn(name=WRITE_TOURNAMENT_ARTIFACTS)
    async def write(self: TournamentArtifactActivities, raw: object) -> str:
        # Defined here, its parameter's type is not resolved: the payload comes as a dict.
        snap = TournamentSnapshot.model_validate(raw)
        if snap.status == "completed":
            gate.started.set()
            while not gate.release.is_set():  # heartbeats, as the real write does meanwhile
                activity.heartbeat()
                await asyncio.sleep(0.2)
        return await real(self, snap)

    monkeypatch.setattr(TournamentArtifactActivities, "write_tournament_artifacts", write)
    yield gate


async def test_a_cancel_during_the_final_write_is_too_late(
    client: Client, settings: Settings, held: HeldFinalWrite
) -> None:
    queue = f"late-cancel-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start(client, queue, profile="quick", seed=3)
        await asyncio.wait_for(held.started.wait(), 120)
        await handle.cancel()
        async for event in handle.fetch_history_events(wait_new_event=True):
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
                break
        held.release.set()
        result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "completed" and result.winner_id
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["completed_at"]
    assert (settings.runs_dir / handle.id / "artifacts" / "final.txt").is_file()
    replayer = Replayer(workflows=[TournamentWorkflow], data_converter=data_converter(settings))
    await replayer.replay_workflow(await handle.fetch_history())
