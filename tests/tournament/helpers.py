"""Shared helpers for tournament workflow tests."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from workflows.names import TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult


async def start(client: Client, queue: str, **fields: Any) -> WorkflowHandle:
    run_id = fields.pop("run_id", None) or f"t-{uuid.uuid4().hex[:10]}"
    payload = TournamentInput(task=fields.pop("task", "Sort a list in place."), **fields)
    return await client.start_workflow(
        TOURNAMENT,
        payload,
        id=run_id,
        task_queue=queue,
        result_type=TournamentResult,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
    )


async def run(client: Client, queue: str, **fields: Any) -> TournamentResult:
    return await (await start(client, queue, **fields)).result()


async def failure(client: Client, queue: str, **fields: Any) -> ApplicationError:
    """The ApplicationError a run fails with."""
    handle = await start(client, queue, **fields)
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    cause = info.value.cause
    assert isinstance(cause, ApplicationError), cause
    return cause


async def cancel_taken(handle: WorkflowHandle, timeout: float = 60) -> None:
    """Wait until a workflow task has completed since the run's cancel was requested: the
    workflow has taken the cancel, not only the server recorded it. Release held calls after
    this, so their answers reach a run already cancelling, however late a loaded worker runs
    its task."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        kinds = [e.event_type for e in (await handle.fetch_history()).events]
        if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in kinds:
            requested = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)
            if EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in kinds[requested:]:
                return
        assert loop.time() < deadline, "the workflow never took the cancel"
        await asyncio.sleep(0.05)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def fingerprint(run_dir: Path) -> dict[str, Any]:
    """What must be identical between two runs with the same seed and model outputs."""
    comparisons = read_jsonl(run_dir / "comparisons.jsonl")
    return {
        "candidates": [
            (c["id"], c["parent_id"], c["text_sha256"])
            for c in read_jsonl(run_dir / "candidates.jsonl")
        ],
        "schedule": [
            (c["id"], c["presented_a"], c["presented_b"], c["winner"]) for c in comparisons
        ],
        "scores": [
            (s["phase"], s["candidate_id"], round(s["score"], 12), s["rank"])
            for s in read_jsonl(run_dir / "scores.jsonl")
        ],
        "winner": json.loads((run_dir / "summary.json").read_text())["winner_id"],
    }
