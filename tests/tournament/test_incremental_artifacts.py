"""Artifact writes send each row about once, and the run directory is what whole writes make.

Every ``write_tournament_artifacts`` input is read back from history (payload store included):
the row lists, stacked on the lines each write says its files already hold, must rebuild the
run's rows, with each comparison sent exactly once; the files on disk must equal the files a
whole snapshot of the end renders. A write that finds lines missing is refused
``run.files_gap`` and the run sends the next one whole.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer

from activities.config import Settings
from activities.run_store import FILES_GAP, RunStore
from activities.tournament.artifacts import (
    WRITE_TOURNAMENT_ARTIFACTS,
    TournamentArtifactActivities,
    render_files,
    stacked,
)
from client.connect import data_converter
from tests.test_run_store import as_workflow
from tests.test_worker_cli import wait_until
from tests.tournament.helpers import read_jsonl, start
from tests.tournament.test_budget_control import paused_run
from worker.worker import WORKFLOWS
from workflows import phases
from workflows.budget import BudgetLimits
from workflows.names import UPDATE_EXTEND_BUDGET
from workflows.tournament.artifact_writes import ArtifactWriter
from workflows.tournament.schedule import FINAL_JUDGING_PHASE
from workflows.tournament.selection import select
from workflows.tournament.types import (
    Event,
    ExtendBudgetInput,
    RoleModels,
    TournamentInput,
    TournamentSnapshot,
)


async def _writes(client: Client, settings: Settings, run_id: str) -> list[TournamentSnapshot]:
    """The run's artifact writes, after checking that its history replays (the patch and the
    gap's whole resend are deterministic)."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    converter = data_converter(settings)
    replayer = Replayer(workflows=WORKFLOWS, data_converter=converter)
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None
    writes = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = event.activity_task_scheduled_event_attributes
        if attrs.activity_type.name == WRITE_TOURNAMENT_ARTIFACTS:
            (snap,) = await converter.decode(attrs.input.payloads, [TournamentSnapshot])
            writes.append(snap)
    return writes


async def test_each_row_is_sent_about_once_and_the_files_match_a_whole_write(
    client: Client, queue: str, settings: Settings
) -> None:
    handle = await start(
        client, queue, profile="balanced", seed=11, model="sim:default", write_interval_s=0
    )
    result = await handle.result()
    writes = await _writes(client, settings, handle.id)
    # At every phase (write_interval_s 0): a write per generation's fit (the population it
    # ranks goes with it), and the end's (the final ranking with it: no finalizer call comes
    # between them).
    assert len(writes) == 2 + 1
    # The generations' writes start after the task that fits (the run's last may not).
    started_with_fit = _writes_started_with_a_fit(await handle.fetch_history())
    assert started_with_fit[:-1] == [False, False]
    assert not any(writes[0].after_lines.values())
    assert all(any(w.after_lines.values()) for w in writes[1:])
    sent = [c.id for w in writes for c in w.comparisons]
    assert len(sent) == len(set(sent))  # every comparison travels once
    # Candidates are sent again only from the first one discarded since.
    assert sum(len(w.candidates) for w in writes) < 2 * len(stacked(writes).candidates)

    run_dir = Path(result.run_dir)
    expected = render_files(stacked(writes))
    for name, text in expected.items():
        assert (run_dir / name).read_text() == text, name
    assert (run_dir / "report.html").is_file()
    # A discarded candidate's row changed after it was written: the file shows the change.
    candidates = {c["id"]: c for c in read_jsonl(run_dir / "candidates.jsonl")}
    scores = read_jsonl(run_dir / "scores.jsonl")
    for g in (1, 2):
        board = [s for s in scores if s["phase"] == phases.generation_judging(g)]
        ranked = [s["candidate_id"] for s in sorted(board, key=lambda s: s["rank"])]
        dropped = select(ranked).discarded
        assert dropped
        assert {candidates[d.candidate_id]["status"] for d in dropped} == {"discarded"}


def _writes_started_with_a_fit(history: WorkflowHistory) -> list[bool]:
    """For each artifact write: whether the workflow task that started it also recorded a
    local activity (a fit). Deferred writes: the task that ends a phase with its fit starts the
    next phase's calls, and the phase's write waits for one of them to land."""
    found = []
    marker = False
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            marker = False  # the commands of the task that just completed follow
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = True
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == WRITE_TOURNAMENT_ARTIFACTS:
                found.append(marker)
    return found


async def test_the_final_ranking_is_written_before_a_finalizer_call(
    client: Client, queue: str, settings: Settings
) -> None:
    handle = await start(
        client,
        queue,
        profile="quick",
        seed=3,
        models=RoleModels(finalize="sim:default"),
        write_interval_s=0,
    )
    await handle.result()
    writes = await _writes(client, settings, handle.id)
    assert len(writes) == 1 + 1 + 1  # generation 1's fit, the final fit, the end
    final = writes[1]
    assert final.status == "running"
    assert any(s.phase == FINAL_JUDGING_PHASE for s in final.scores)


async def test_a_gap_in_the_run_directory_makes_the_next_write_whole(
    client: Client, queue: str, settings: Settings
) -> None:
    # The jittery judge's retries spend the headroom: 60 calls pause mid-judging.
    handle = await paused_run(client, queue, max_calls=60, write_interval_s=0)
    run_dir = settings.runs_dir / handle.id
    (run_dir / "comparisons.jsonl").unlink()  # lost: another worker's disk, or deleted
    await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=200), result_type=object
    )
    result = await handle.result()
    writes = await _writes(client, settings, handle.id)
    assert any(not any(w.after_lines.values()) for w in writes[1:])  # a whole one after the gap
    expected = render_files(stacked(writes))
    assert (Path(result.run_dir) / "comparisons.jsonl").read_text() == expected["comparisons.jsonl"]


async def test_a_running_run_writes_its_files_at_most_once_an_interval(
    client: Client, queue: str, settings: Settings
) -> None:
    """The default ``write_interval_s`` (10 s): the same run as above, written at every phase
    with 0, skips the writes that would follow the run's start or the last write sooner."""
    handle = await start(client, queue, profile="balanced", seed=11, model="sim:default")
    result = await handle.result()
    writes = await _writes(client, settings, handle.id)
    assert len(writes) < 2 + 1
    started = (await handle.describe()).start_time
    assert started is not None
    taken = [started, *(datetime.fromisoformat(w.written_at) for w in writes[:-1])]
    assert all(later - earlier >= timedelta(seconds=10) for earlier, later in pairwise(taken))
    assert writes[-1].status == "completed"
    run_dir = Path(result.run_dir)
    for name, text in render_files(stacked(writes)).items():
        assert (run_dir / name).read_text() == text, name


async def test_a_run_that_pauses_writes_its_files_then(
    client: Client, queue: str, settings: Settings
) -> None:
    """A pause for a budget extension waits for a person: the run directory shows it then,
    however recently the run started."""
    handle = await paused_run(client, queue, max_calls=60)
    summary = settings.runs_dir / handle.id / "summary.json"

    def shows_the_pause() -> bool:
        return summary.is_file() and json.loads(summary.read_text())["status"] == "awaiting_budget"

    await wait_until(shows_the_pause, 60)
    await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=200), result_type=object
    )
    await handle.result()
    statuses = [w.status for w in await _writes(client, settings, handle.id)]
    assert "awaiting_budget" in statuses and statuses[-1] == "completed"


async def test_an_append_past_the_files_end_is_refused_files_gap(tmp_path: Path) -> None:
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    store = RunStore(tmp_path)
    activities = TournamentArtifactActivities(store)
    snap = _snapshot(run_id, events=0, after=3, populations={})  # 3 lines sent, none there
    with pytest.raises(ApplicationError) as refused:
        await as_workflow(run_id).run(activities.write_tournament_artifacts, snap)
    assert refused.value.type == FILES_GAP
    assert ArtifactWriter().incremental is False  # runs before the patch send whole snapshots


def _snapshot(
    run_id: str, events: int, after: int, populations: dict[int, list[str]]
) -> TournamentSnapshot:
    return TournamentSnapshot.model_validate(
        {
            "run_id": run_id,
            "status": "running",
            "input": TournamentInput(task="t"),
            "seed": 1,
            "profile": None,
            "profile_name": None,
            "candidates": [],
            "populations": populations,
            "comparisons": [],
            "scores": [],
            "usage": [],
            "events": [
                Event(seq=i, ts="2026-01-01T00:00:00+00:00", type="e") for i in range(after, events)
            ],
            "budget": BudgetLimits(),
            "spent": {},
            "written_at": "2026-01-01T00:00:00+00:00",
            "after_lines": {"events.jsonl": after},
        }
    )


async def test_an_incremental_write_leaves_settled_files_and_restores_missing_ones(
    tmp_path: Path,
) -> None:
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    activities = TournamentArtifactActivities(RunStore(tmp_path))
    env = as_workflow(run_id)
    run_dir = tmp_path / run_id
    await env.run(activities.write_tournament_artifacts, _snapshot(run_id, 2, 0, {0: ["a"]}))
    config, population = (run_dir / "config.json").stat(), (run_dir / "population-0.json").stat()
    summary = (run_dir / "summary.json").stat()
    two = {0: ["a"], 1: ["b"]}
    await env.run(activities.write_tournament_artifacts, _snapshot(run_id, 4, 2, two))
    # A write replaces a file (a new inode): these two were left as they were.
    assert (run_dir / "config.json").stat().st_ino == config.st_ino
    assert (run_dir / "population-0.json").stat().st_ino == population.st_ino
    assert (run_dir / "summary.json").stat().st_ino != summary.st_ino
    assert (run_dir / "population-1.json").exists()
    assert len((run_dir / "events.jsonl").read_text().splitlines()) == 4
    (run_dir / "config.json").unlink()
    await env.run(activities.write_tournament_artifacts, _snapshot(run_id, 5, 4, two))
    assert json.loads((run_dir / "config.json").read_text())["task"] == "t"
