"""Ponder's own files are not a run's to read or write, through the real ``temporal`` binary.

A worker whose declared root holds its own home (the embedded default used to declare the whole
user home): a plan whose workspace is another run's directory, ponder's home, or a symlink into
the runs store ends ``artifact-path-escapes-root`` before any ``file_contains`` is answered, and
a right guess about the victim's output fails exactly as a wrong one does (no one-bit oracle).
Training pairs land in the writing run's own files: a run of another plan name, of the same plan
name, or under the victim's reused run id never appends to the victim's pair file.

Each case asserts the harness's three things: the hostile run ends with its code within a
bounded time, a probe ``Ask`` on the same worker completes within 10 s while it is processed,
and the worker exits within 10 s of SIGTERM (``shared_worker``).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from activities.run_store import RUN_ID_IN_USE
from tests.hostile.harness import SharedWorker, dumps, shared_worker
from workflows.names import PLAN_RUN
from workflows.plan.training import safe_name

ESCAPES = "artifact-path-escapes-root"
SECRET = "the launch code is 7431"
PAIRS_PLAN = "Release Notes"


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _step(prompt: str, output: str, **fields: Any) -> dict[str, Any]:
    return {"id": "s", "kind": "agent", "model": "sim:default", "prompt": prompt,
            "x-sim": {"outputs": [output]}, **fields}  # fmt: skip


def _plan(name: str, *steps: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"schema": "ponder-plan/1", "name": name, **header, "steps": list(steps)}


def _guess(workspace: str, path: str, text: str) -> dict[str, Any]:
    """A plan whose one step passes only if ``path`` under ``workspace`` holds ``text``."""
    ensure = [{"file_contains": {"path": path, "text": text}}]
    return _plan("oracle", _step("Say ok.", "ok", ensure=ensure), workspace=workspace)


def _types(error: BaseException | None) -> list[str]:
    """Every failure type along the cause chain."""
    found = []
    while error is not None:
        if isinstance(error, ApplicationError) and error.type:
            found.append(error.type)
        error = error.__cause__ or getattr(error, "cause", None)
    return found


async def _ended(worker: SharedWorker, run_id: str) -> set[tuple[str, str]]:
    """(activity, outcome) of each activity of the run's latest execution that ended."""
    history = await worker.handle(run_id).fetch_history()
    names = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    ended = set()
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            ended.add((names[e.activity_task_completed_event_attributes.scheduled_event_id], "ok"))
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            failed = e.activity_task_failed_event_attributes
            kind = failed.failure.application_failure_info.type
            ended.add((names[failed.scheduled_event_id], kind))
    return ended


async def _scheduled(worker: SharedWorker, run_id: str) -> list[str]:
    history = await worker.handle(run_id).fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_a_run_cannot_probe_or_append_to_ponders_own_files(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    (tmp_path / "ws").mkdir()
    toml = f'[plans]\nworkspace_roots = ["{tmp_path}"]\n'  # the root holds ponder's home
    async with shared_worker(client, settings, server_address, toml=toml) as worker:
        victim = _id("victim")
        pairs = _plan(PAIRS_PLAN, _step("Draft the notes.", SECRET), training_pairs=True)
        await worker.start(PLAN_RUN, victim, dumps({"plan": pairs}))
        await asyncio.wait_for(worker.handle(victim).result(), 60)
        victim_dir = settings.runs_dir / victim
        holding = [
            p.name
            for p in victim_dir.iterdir()
            if p.is_file() and SECRET in p.read_text(errors="replace")
        ]
        assert holding, "the victim's outputs are on disk (what the oracle would read)"
        pair_file = (
            settings.training_dir / safe_name(PAIRS_PLAN) / victim / f"{safe_name('s')}.jsonl"
        )
        before = pair_file.read_bytes()
        assert SECRET in before.decode()

        (tmp_path / "ws" / "runs").symlink_to(settings.runs_dir)
        oracles = {
            # The plan's workspace is the victim's run directory.
            "right": _guess(str(victim_dir), holding[0], SECRET),
            "wrong": _guess(str(victim_dir), holding[0], "the launch code is 0000"),
            # The root itself holds the home: a workspace that holds a store is refused.
            "holds": _guess(str(tmp_path), f"home/runs/{victim}/{holding[0]}", SECRET),
            "home": _guess(str(settings.home), f"runs/{victim}/{holding[0]}", SECRET),
            # A symlink into the runs store is judged by where it leads.
            "linked": _guess(str(tmp_path / "ws" / "runs" / victim), holding[0], SECRET),
        }
        ids = {name: _id(f"oracle-{name}") for name in oracles}
        for name, plan in oracles.items():
            await worker.start(PLAN_RUN, ids[name], dumps({"plan": plan}))

        # Pairs: another plan name, the victim's plan name, and the victim's own run id reused.
        other, same = _id("pairs-other"), _id("pairs-same")
        poison = _step("Draft the notes.", "POISONED")
        await worker.start(PLAN_RUN, other, dumps({"plan": {**pairs, "name": "Other",
                                                            "steps": [poison]}}))  # fmt: skip
        await worker.start(PLAN_RUN, same, dumps({"plan": {**pairs, "steps": [poison]}}))
        await worker.start(PLAN_RUN, victim, dumps({"plan": {**pairs, "steps": [poison]}}))

        await worker.probe()
        errors = {name: await worker.failure(ids[name]) for name in oracles}
        for name, error in errors.items():
            assert error.type == ESCAPES, (name, error)
            assert "ponder's store" in error.message, (name, error.message)
            assert "7431" not in error.message and "contain" not in error.message, error.message
            scheduled = await _scheduled(worker, ids[name])
            assert "plan_probe_files" not in scheduled and "call_model" not in scheduled, name
        assert errors["right"].message == errors["wrong"].message  # no bit either way
        await worker.probe()

        await asyncio.wait_for(worker.handle(other).result(), 60)
        await asyncio.wait_for(worker.handle(same).result(), 60)
        # The victim's id started again: the id is claimed by the first execution, so the
        # step's call is refused and nothing is captured (the writer checks the claim too).
        with pytest.raises(WorkflowFailureError) as ended:
            await asyncio.wait_for(worker.handle(victim).result(), 60)
        assert RUN_ID_IN_USE in _types(ended.value)
        assert "append_training_pair" not in {name for name, _ in await _ended(worker, victim)}
        await worker.probe()

    assert pair_file.read_bytes() == before  # nobody appended to the victim's file
    written = sorted(settings.training_dir.rglob("*.jsonl"))
    owners = sorted(p.relative_to(settings.training_dir).parts[:2] for p in written)
    expected = [("Other", other), (PAIRS_PLAN, same), (PAIRS_PLAN, victim)]
    assert owners == sorted((safe_name(plan), run) for plan, run in expected)
