"""Saved histories still replay: a workflow change that breaks running histories fails here.

When a change to workflow logic is intended, guard it with ``workflow.patched(...)``; only
re-record (``python -m tests.histories.record``) for changes no running history depends on.
"""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from worker.worker import WORKFLOWS
from workflows.versioned import VERSIONED

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_histories_to_replay() -> None:
    expected = {
        "ask",
        "tournament-quick",
        "tournament-paused-adaptive",
        "plan-paused",
        "plan-report",
        "plan-checks",
        "plan-gate-deadline",
        "plan-worktrees",
        "plan-consumer",
        "tournament-judging",
        "tournament-final-fit-split",
        "tournament-current",
        "campaign",
        "versioned-ask",
        "versioned-plan-gate",
    }
    assert {p.stem for p in HISTORIES} >= expected


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_history_replays(path: Path, settings: Settings) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    # A versioned worker's runs replay against the classes it registers.
    versioned = path.stem.startswith("versioned-")
    workflows = [VERSIONED.get(c, c) for c in WORKFLOWS] if versioned else WORKFLOWS
    replayer = Replayer(workflows=workflows, data_converter=data_converter(settings))
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


def test_a_history_covers_a_local_activity_that_ends_a_workflow_task() -> None:
    """tournament-final-fit-split (a ``ponder think --profile quick`` run): the final fit's
    local-activity marker closes a workflow task and the code after it (the bootstrap) runs in
    the next. ``workflow.patched`` asked at that point answered False on replay and failed it
    ("patch marker encountered ... no corresponding change command"); the Tournament now asks
    its patches in its first task."""
    events = json.loads((Path(__file__).parent / "histories/tournament-final-fit-split.json")
                        .read_text())["events"]  # fmt: skip
    ends = []
    for event, after in itertools.pairwise(events):
        marker = event.get("markerRecordedEventAttributes")
        if marker and after["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED":
            data = base64.b64decode(marker["details"]["data"]["payloads"][0]["data"])
            ends.append(json.loads(data)["activity_type"])
    assert "fit_leaderboard" in ends
