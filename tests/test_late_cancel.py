"""A real tournament, plan or campaign cancelled while it writes its completed files completes
(``workflows/completion.py``): the final write is held until the cancel is in the run's history,
then let go. The run's status, its files and its history agree, and the history replays. (The
helper's own tests, on purpose-built workflows, are in ``tests/test_completion.py``.)"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Replayer

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
from tests.test_completion import cancel_recorded
from tests.tournament.helpers import start as start_tournament
from worker.connect import data_converter
from worker.worker import WORKFLOWS, WorkerOptions, running_worker
from workflows.campaign.activity_contracts import WRITE_CAMPAIGN_ARTIFACTS
from workflows.campaign.types import CampaignArtifactsInput, CampaignResult
from workflows.names import CAMPAIGN
from workflows.tournament.types import TournamentSnapshot


@dataclass(frozen=True)
class FinalWrite:
    """The activity that writes a run's completed files, and how to tell its last write."""

    owner: type
    method: str
    name: str
    input_type: type[BaseModel]
    is_final: Callable[[Any], bool]


async def cancelled_during(
    final: FinalWrite,
    start: Callable[[str], Awaitable[WorkflowHandle]],
    client: Client,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[WorkflowHandle, Any]:
    """Start a run on a worker whose final write waits until the run's cancel is in its history,
    then let it go: the run must end COMPLETED and its history replay. Its handle and result."""
    started, release = asyncio.Event(), asyncio.Event()
    real = getattr(final.owner, final.method)

    @activity.defn(name=final.name)
    async def write(self: object, raw: object) -> Any:
        # Defined here, its parameter's type is not resolved: the payload comes as a dict.
        value = final.input_type.model_validate(raw)
        if final.is_final(value):
            started.set()
            while not release.is_set():  # heartbeats, as the real write does
                activity.heartbeat()
                await asyncio.sleep(0.2)
        return await real(self, value)

    monkeypatch.setattr(final.owner, final.method, write)
    queue = f"late-cancel-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start(queue)
        await asyncio.wait_for(started.wait(), 120)
        await cancel_recorded(handle)
        release.set()
        result = await asyncio.wait_for(handle.result(), 120)
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    await replayer.replay_workflow(await handle.fetch_history())
    return handle, result


async def test_a_tournament_cancelled_during_its_final_write_completes(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = FinalWrite(
        TournamentArtifactActivities,
        "write_tournament_artifacts",
        WRITE_TOURNAMENT_ARTIFACTS,
        TournamentSnapshot,
        lambda snap: snap.status == "completed",
    )
    handle, result = await cancelled_during(
        final,
        lambda queue: start_tournament(client, queue, profile="quick", seed=3),
        client,
        settings,
        monkeypatch,
    )
    assert result.status == "completed" and result.winner_id
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["completed_at"]
    assert (settings.runs_dir / handle.id / "artifacts" / "final.txt").is_file()


def _closes_completed(files: WriteRunFilesInput) -> bool:
    cost = files.files.get("cost.json")
    return cost is not None and json.loads(cost)["outcome"] == "completed"


async def test_a_plan_cancelled_during_its_final_write_completes(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = FinalWrite(
        PlanFileActivities, "write_plan_files", WRITE_PLAN_FILES, WriteRunFilesInput,
        _closes_completed,
    )  # fmt: skip
    plan = plan_doc(agent("draft", "Draft it.", "done"))
    handle, result = await cancelled_during(
        final, lambda queue: start_plan(client, queue, plan), client, settings, monkeypatch
    )
    assert result.status == "completed" and result.calls == 1
    cost = json.loads((settings.runs_dir / handle.id / "cost.json").read_text())
    assert cost["outcome"] == "completed"
    trace = (settings.runs_dir / handle.id / "trace.jsonl").read_text().splitlines()
    closed = json.loads(trace[-1])
    assert (closed["type"], closed["data"]["outcome"]) == ("run.closed", "completed")


async def test_a_campaign_cancelled_during_its_final_write_completes(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = FinalWrite(
        CampaignArtifactActivities,
        "write_campaign_artifacts",
        WRITE_CAMPAIGN_ARTIFACTS,
        CampaignArtifactsInput,
        lambda write: write.status == "completed",
    )
    doc = document(scenarios=document()["scenarios"][:1], seeds=[0], min_pairs=1)

    def start(queue: str) -> Awaitable[WorkflowHandle]:
        run_id = f"camp-{uuid.uuid4().hex[:8]}"
        return client.start_workflow(
            CAMPAIGN, doc, id=run_id, task_queue=queue, result_type=CampaignResult
        )

    handle, result = await cancelled_during(final, start, client, settings, monkeypatch)
    assert result.status == "completed" and result.cells == 2
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "completed"
