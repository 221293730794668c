"""Saved histories still replay: a workflow change that breaks running histories fails here.

When a change to workflow logic is intended, guard it with ``workflow.patched(...)``; only
re-record (``python -m tests.histories.record``) for changes no running history depends on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from worker.worker import WORKFLOWS

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
        "campaign",
    }
    assert {p.stem for p in HISTORIES} >= expected


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_history_replays(path: Path, settings: Settings) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
