"""One run cannot reach another, through the real ``temporal`` binary.

A run's directory is its workflow id: input that names another run's id is refused at decode
(``input.invalid``) by every workflow that writes one, a closed run's id started again is
refused at its first write (``run.id_in_use``), and ``replay:`` reads only recordings
inside the run store, never through a link and never a file that is not a recording. Each test
also asserts the harness's rule: a probe Ask on the same worker answers within 10 s, and the
worker exits within 10 s of SIGTERM.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import orjson
from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import SharedWorker, dumps, shared_worker
from workflows.names import ASK, PLAN_RUN, TOURNAMENT
from workflows.run_capabilities import READ_TOKEN_FILE

CODED_WITHIN = 30.0
"""A refused run ends well inside this (a retried one took 32 s and ended uncoded)."""


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}


async def _single_attempts(worker: SharedWorker, workflow_id: str) -> None:
    """Every activity of the run ran once: the refusal came at once, not after retries."""
    history = await worker.handle(workflow_id).fetch_history()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert attempts and set(attempts) == {1}, attempts


async def test_a_run_cannot_write_another_runs_directory(
    client: Client, settings: Settings, server_address: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    victim = f"iso-ok-{tag}"
    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(ASK, victim, dumps({"question": "original", "model": "sim:default"}))
        original = await asyncio.wait_for(worker.handle(victim).result(), CODED_WITHIN)
        run_dir = settings.runs_dir / victim
        before = _snapshot(run_dir)
        assert {"artifacts/answer.txt", "summary.json", "raw-events.jsonl"} <= set(before)

        hijackers = {
            ASK: {"question": "OVERWRITTEN", "model": "sim:default,chars=20"},
            TOURNAMENT: {"task": "OVERWRITTEN", "model": "sim:default"},
            PLAN_RUN: {"plan": {"name": "p", "steps": []}},
        }
        ids = {kind: f"iso-hijack-{kind.lower()}-{tag}" for kind in hijackers}
        for kind, payload in hijackers.items():
            await worker.start(kind, ids[kind], dumps({**payload, "run_id": victim}))
        await worker.probe()
        for kind, workflow_id in ids.items():
            error = await worker.failure(workflow_id, within=CODED_WITHIN)
            assert error.type == "input.invalid", (kind, error)
            assert f"run_id: {victim!r} is not this run's workflow id" in error.message
            assert not (settings.runs_dir / workflow_id).exists()  # refused before any write

        assert _snapshot(run_dir) == before
        # The victim's own id, started again once it closed (Temporal allows that by default):
        # another execution, refused before it writes.
        again = {"question": "OVERWRITTEN", "model": "sim:default,chars=20"}
        await worker.start(ASK, victim, dumps(again))
        error = await worker.failure(victim, within=CODED_WITHIN)
        assert error.type == "run.id_in_use" and "already used by an earlier run" in error.message
        assert _snapshot(run_dir) == before
        # Replaying the victim still answers with its own text, not a hijacker's.
        replay = f"iso-replay-{tag}"
        token = (run_dir / READ_TOKEN_FILE).read_text().strip()  # its owner can read it
        from_victim = {
            "question": "original",
            "model": f"replay:{victim}",
            "calls": {"read_tokens": {victim: token}},
        }
        await worker.start(ASK, replay, dumps(from_victim))
        replayed = await asyncio.wait_for(worker.handle(replay).result(), CODED_WITHIN)
        assert replayed["response"]["text"] == original["response"]["text"]


async def test_replay_reads_only_recordings_inside_the_run_store(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    """``replay:RUN_ID`` through a symlinked run directory, and ``replay:<a summary.json>``, are
    refused at once with ``provider.config`` (they were followed, or failed after 32 s with an
    uncoded JSONDecodeError)."""
    tag = uuid.uuid4().hex[:8]
    body = {"model": "m", "choices": [{"message": {"content": "from outside"}}]}
    event = {"call_key": "ask/0/0", "provider_kind": "openai"}
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "raw-events.jsonl").write_bytes(
        orjson.dumps({**event, "response": {"status": 200, "body": body}}) + b"\n"
    )
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    linked = f"iso-linked-{tag}"
    (settings.runs_dir / linked).symlink_to(outside, target_is_directory=True)
    recorded = settings.runs_dir / f"iso-rec-{tag}"
    recorded.mkdir()
    (recorded / "summary.json").write_text('{\n  "status": "completed"\n}\n')
    (recorded / "raw-events.jsonl").write_text("not json\n[1]\n")  # no exchange in it
    token = "0123456789abcdef" * 2
    (recorded / READ_TOKEN_FILE).write_text(token)

    async with shared_worker(client, settings, server_address) as worker:
        cases = {
            f"iso-via-link-{tag}": (f"replay:{linked}", "provider.config", "symlink"),
            f"iso-summary-{tag}": (
                f"replay:{recorded / 'summary.json'}",
                "provider.config",
                "is not a recording",
            ),
            f"iso-garbage-{tag}": (
                f"replay:{recorded.name}",
                "provider.malformed_output",
                "no successful exchange",
            ),
        }
        # Each with a read token, so the rules checked are the recording's own: a link is
        # refused before any token is looked at.
        tokens = {"read_tokens": {linked: token, recorded.name: token}}
        for workflow_id, (model, _, _) in cases.items():
            ask = {"question": "q", "model": model, "calls": tokens}
            await worker.start(ASK, workflow_id, dumps(ask))
        await worker.probe()
        for workflow_id, (_, code, said) in cases.items():
            error = await worker.failure(workflow_id, within=CODED_WITHIN)
            assert error.type == code, (workflow_id, error)
            assert said in error.message, error.message
            assert "from outside" not in error.message
            await _single_attempts(worker, workflow_id)
