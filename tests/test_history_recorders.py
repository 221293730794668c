"""The history recorders (``tests/histories/record_*.py``) still record: one runs for real on its
own dev server through the shared helper, writing where ``PONDER_HISTORY_OUT`` says (never over
the committed histories), and what it wrote replays."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from tests.histories import OUT, out_dir, record_tournament
from tests.histories.record_current import RUN
from worker.worker import WORKFLOWS


def test_recorders_write_beside_the_histories_unless_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PONDER_HISTORY_OUT", raising=False)
    assert out_dir() == OUT
    monkeypatch.setenv("PONDER_HISTORY_OUT", str(tmp_path))
    assert out_dir() == tmp_path


async def test_a_recorder_records_a_history_that_replays(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, settings: Settings
) -> None:
    monkeypatch.setenv("PONDER_HISTORY_OUT", str(tmp_path))
    committed = (OUT / "tournament-current.json").read_text()
    await record_tournament(RUN, "current-history", "tournament-current.json")
    assert (OUT / "tournament-current.json").read_text() == committed
    path = tmp_path / "tournament-current.json"
    history = WorkflowHistory.from_json("current-history", path.read_text())
    assert history.events[0].workflow_execution_started_event_attributes.workflow_type.name == (
        "Tournament"
    )
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
