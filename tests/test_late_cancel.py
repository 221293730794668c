"""A real tournament, plan or campaign cancelled while it writes its completed files completes
(``workflows/completion.py``): the final write is held until the cancel is in the run's history,
then let go. The run's status, its files and its history agree, and the history replays. (The
helper's own tests, on purpose-built workflows, are in ``tests/test_completion.py``.)"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Replayer

from activities.campaign.names import WRITE_CAMPAIGN_ARTIFACTS
from activities.campaign.report import CampaignArtifactActivities
from activities.config import Settings
from activities.plan.files import WRITE_PLAN_FILES, PlanFileActivities
from activities.run_store import WriteRunFilesInput
from activities.tournament.artifacts import (
    WRITE_TOURNAMENT_ARTIFACTS,
    TournamentArtifactActivities,
)
from tests.campaigns.helpers import document
from tests.plans.run_helpers import agent, plan_doc
from tests.plans.run_helpers import start as start_plan
from tests.tournament.helpers import start as start_tournament
from worker.connect import data_converter
from worker.worker import WORKFLOWS, WorkerOptions, running_worker
from workflows.campaign.types import CampaignArtifactsInput, CampaignResult
from workflows.names import CAMPAIGN
from workflows.tournament.types import TournamentSnapshot


class HeldWrite:
    """A final write that waits until the test lets it go; every other write runs as ever."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    def hold(
        self,
        monkeypatch: pytest.MonkeyPatch,
        owner: type,
        method: str,
        name: str,
        input_type: type[BaseModel],
        is_final: Callable[[Any], bool],
    ) -> None:
        real = getattr(owner, method)

        @activity.defn(name=name)
        async def write(self_: object, raw: object) -> Any:
            # Defined here, its parameter's type is not resolved: the payload comes as a dict.
            value = input_type.model_validate(raw)
            if is_final(value):
                self.started.set()
                while not self.release.is_set():  # heartbeats, as the real write does
                    activity.heartbeat()
                    await asyncio.sleep(0.2)
            return await real(self_, value)

        monkeypatch.setattr(owner, method, write)

    async def cancel_while_held(self, handle: WorkflowHandle) -> None:
        await asyncio.wait_for(self.started.wait(), 120)
        await handle.cancel()
        async for event in handle.fetch_history_events(wait_new_event=True):
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
                break
        self.release.set()


async def completed_and_replays(handle: WorkflowHandle, settings: Settings) -> None:
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    await replayer.replay_workflow(await handle.fetch_history())


async def test_a_tournament_cancelled_during_its_final_write_completes(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrite()
    held.hold(
        monkeypatch,
        TournamentArtifactActivities,
        "write_tournament_artifacts",
        WRITE_TOURNAMENT_ARTIFACTS,
        TournamentSnapshot,
        lambda snap: snap.status == "completed",
    )
    queue = f"late-cancel-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start_tournament(client, queue, profile="quick", seed=3)
        await held.cancel_while_held(handle)
        result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "completed" and result.winner_id
    await completed_and_replays(handle, settings)
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["completed_at"]
    assert (settings.runs_dir / handle.id / "artifacts" / "final.txt").is_file()


def _closes_completed(files: WriteRunFilesInput) -> bool:
    cost = files.files.get("cost.json")
    return cost is not None and json.loads(cost)["outcome"] == "completed"


async def test_a_plan_cancelled_during_its_final_write_completes(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrite()
    held.hold(
        monkeypatch,
        PlanFileActivities,
        "write_plan_files",
        WRITE_PLAN_FILES,
        WriteRunFilesInput,
        _closes_completed,
    )
    queue = f"late-cancel-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start_plan(client, queue, plan_doc(agent("draft", "Draft it.", "done")))
        await held.cancel_while_held(handle)
        result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "completed" and result.calls == 1
    await completed_and_replays(handle, settings)
    cost = json.loads((settings.runs_dir / handle.id / "cost.json").read_text())
    assert cost["outcome"] == "completed"
    trace = (settings.runs_dir / handle.id / "trace.jsonl").read_text().splitlines()
    closed = json.loads(trace[-1])
    assert (closed["type"], closed["data"]["outcome"]) == ("run.closed", "completed")


async def test_a_campaign_cancelled_during_its_final_write_completes(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrite()
    held.hold(
        monkeypatch,
        CampaignArtifactActivities,
        "write_campaign_artifacts",
        WRITE_CAMPAIGN_ARTIFACTS,
        CampaignArtifactsInput,
        lambda write: write.status == "completed",
    )
    doc = document(scenarios=document()["scenarios"][:1], seeds=[0], min_pairs=1)
    queue = f"late-cancel-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            CAMPAIGN, doc, id=f"camp-{uuid.uuid4().hex[:8]}", task_queue=queue,
            result_type=CampaignResult,
        )  # fmt: skip
        await held.cancel_while_held(handle)
        result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "completed" and result.cells == 2
    await completed_and_replays(handle, settings)
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "completed"
