"""Training-pair capture (docs/plans.md, "Training pairs") through a real PlanRun and worker.

One line per successful settle (a contract retry's failed attempt is not a pair; every region
item is), in the run's own files (a second run of the same plan name writes its own and never
touches the first run's), an empty output is a ``capture.failed``, and an unwritable training
directory never fails the run.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.plans.run_helpers import agent, events, plan_doc, start, status, trace
from worker.worker import WorkerOptions, running_worker
from workflows.plan.limits import estimate_history
from workflows.plan.run_types import PlanEvent, PlanRunResult, PlanStatus
from workflows.plan.training import safe_name
from workflows.plan.validate import load_plan

PLAN = plan_doc(
    agent(
        "draft",
        "Draft notes.",
        "not json",
        '{"items": ["a"]}',
        out="Notes",
        retry={"max_attempts": 2, "on": ["malformed-output"]},
        idempotent=True,
    ),
    {
        "id": "fan",
        "kind": "fanout",
        "deps": ["draft"],
        "fanout": {"over": ["x", "y"], "chain": ["fan.one"]},
    },
    agent("fan.one", "Handle it.", "handled"),
    agent("quiet", "Say nothing.", "", deps=["fan"]),
    name="Release Notes",
    contracts={"Notes": {"items": "string[]"}},
    budget={"calls": 10},
    training_pairs=True,
)


def pairs(root: Path, run_id: str, step: str) -> list[dict[str, Any]]:
    path = root / safe_name("Release Notes") / run_id / f"{safe_name(step)}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@dataclass
class Ran:
    run_id: str
    result: PlanRunResult
    events: list[PlanEvent]
    status: PlanStatus


async def run_once(client: Client, settings: Settings, plan: dict[str, Any]) -> Ran:
    """Run the plan on a worker with these settings; read its events and status (queries)
    while that worker still serves them."""
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start(client, queue, plan)
        result: PlanRunResult = await handle.result()
        return Ran(handle.id, result, await events(handle), await status(handle))


async def test_each_successful_settle_is_one_pair_and_a_second_run_keeps_its_own(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    root = tmp_path / "training"
    settings = settings.model_copy(update={"training_dir": root})
    ran = await run_once(client, settings, PLAN)
    (draft,) = pairs(root, ran.run_id, "draft")  # the malformed first attempt is no pair
    assert draft["output"] == '{"items": ["a"]}'
    assert "Your previous attempt failed" in draft["input"]  # the prompt as sent
    assert (draft["run_id"], draft["step"], draft["item"]) == (ran.run_id, "draft", None)
    assert draft["provenance"]["model"] == "sim:default" and draft["provenance"]["role"] == "draft"
    assert draft["capture_mode"] == "capture" and draft["resumed"] is False
    items = pairs(root, ran.run_id, "fan.one")
    assert sorted(p["item"] for p in items) == [0, 1]
    assert all(p["output"] == "handled" for p in items)
    assert not (
        root / safe_name("Release Notes") / ran.run_id / f"{safe_name('quiet')}.jsonl"
    ).exists()
    assert [f.model_dump() for f in ran.result.capture_failures] == [
        {"step": "quiet", "mode": "capture", "reason": "empty-output", "detail": None}
    ]
    assert ran.status.capture_failures == ran.result.capture_failures
    written = [e for e in ran.events if e.type == "capture.written"]
    assert sorted(e.data["step"] for e in written) == ["draft", "fan.one", "fan.one"]
    on_disk = [e["type"] for e in trace(settings.runs_dir, ran.run_id)]
    assert on_disk.count("capture.written") == 3 and on_disk.count("capture.failed") == 1
    assert (root / "README.md").read_text().startswith("# ponder training pairs")

    # A second run of the plan name: its own files, the first run's untouched.
    first = {
        p: p.read_bytes() for p in (root / safe_name("Release Notes")).rglob("*") if p.is_file()
    }
    again = await run_once(client, settings, PLAN)
    kinds = [e.type for e in again.events]
    assert kinds.count("capture.written") == 3 and "capture.dup" not in kinds
    assert len(pairs(root, again.run_id, "draft")) == 1
    assert len(pairs(root, again.run_id, "fan.one")) == 2
    assert {p: p.read_bytes() for p in first} == first


async def test_an_unwritable_training_directory_never_fails_the_run(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    settings = settings.model_copy(update={"training_dir": blocker / "training"})
    plan = plan_doc(
        agent("draft", "Draft notes.", "notes"),
        agent("ship", "Ship ${steps.draft.output}.", "shipped", deps=["draft"]),
        training_pairs=True,
    )
    ran = await run_once(client, settings, plan)
    assert ran.result.outputs == {"draft": "notes", "ship": "shipped"}
    failures = [f.model_dump() for f in ran.result.capture_failures]
    assert [(f["step"], f["reason"]) for f in failures] == [("draft", "io"), ("ship", "io")]
    assert "NotADirectoryError" in failures[0]["detail"]
    failed = [e for e in ran.events if e.type == "capture.failed"]
    assert [e.data["reason"] for e in failed] == ["io", "io"]


async def test_a_plan_without_training_pairs_captures_nothing(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    root = tmp_path / "training"
    settings = settings.model_copy(update={"training_dir": root})
    ran = await run_once(client, settings, plan_doc(agent("draft", "Draft.", "notes")))
    assert not root.exists()
    assert not [e for e in ran.events if e.type.startswith("capture.")]


async def test_the_history_estimate_covers_the_capture_activities(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    """``plan.too_large`` bounds a plan by its worst-case history; capture adds an activity to
    every agent settle, so the estimate counts it (a 40-item region doubles its activities)."""
    plan = plan_doc(
        {"id": "fan", "kind": "fanout", "fanout": {"over": list(range(40)), "chain": ["one"]}},
        agent("one", "Handle it.", "handled"),
        budget={"calls": 40},
        training_pairs=True,
    )
    settings = settings.model_copy(update={"training_dir": tmp_path / "training"})
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await start(client, queue, plan)
        await handle.result()
        real = len((await handle.fetch_history()).events)
    estimate = estimate_history(load_plan(plan)).events
    assert real <= estimate, (real, estimate)
