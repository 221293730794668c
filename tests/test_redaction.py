"""Every configured key is redacted wherever it could land: answers, artifacts, history."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, Seen, openai_completion, sim_responder
from tests.tournament.helpers import run
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK
from workflows.tournament.types import Profile

SECRET = "sk-echo-" + "Lm4" * 12


def keyed(settings: Settings, monkeypatch: pytest.MonkeyPatch, fake: FakeProvider) -> Settings:
    monkeypatch.setenv("ECHO_PROVIDER_KEY", SECRET)
    endpoint = Endpoint(
        kind="openai", base_url=fake.url, api_key_env="ECHO_PROVIDER_KEY", ponder_headers=True
    )
    return with_endpoint(settings, "local", endpoint)


def files_containing(root: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle.encode() in p.read_bytes()
    ]


def history_contains(events: list[object], needle: str) -> bool:
    # Payload data is raw JSON bytes inside each serialized event.
    return any(needle.encode() in e.SerializeToString() for e in events)  # type: ignore[attr-defined]


async def test_a_key_echoed_in_a_completion_never_reaches_history_or_the_answer(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = keyed(settings, monkeypatch, fake)
    fake.replies = [Reply(200, openai_completion(f"your key is {SECRET}, keep it safe"))]
    queue = f"test-{uuid.uuid4()}"
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            ASK,
            AskInput(question="hi", model="local:m", run_id=run_id),
            id=run_id,
            task_queue=queue,
            result_type=AskResult,
        )
        result = await handle.result()
    assert result.response.text == "your key is [redacted], keep it safe"
    history = await handle.fetch_history()
    assert history_contains(history.events, "your key is [redacted]")
    assert not history_contains(history.events, SECRET)
    assert files_containing(settings.runs_dir, SECRET) == []
    answer = settings.runs_dir / run_id / "artifacts" / "answer.txt"
    assert answer.read_text() == "your key is [redacted], keep it safe"


async def test_a_tournament_redacts_the_key_from_every_artifact(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = keyed(settings, monkeypatch, fake)

    def echoing(seen: Seen) -> Reply:
        reply = sim_responder(seen)
        if seen.headers.get("x-ponder-role") != "judge":
            message = reply.body["choices"][0]["message"]
            message["content"] = f"{message['content']}\nleaked {SECRET}"
        return reply

    fake.responder = echoing
    queue = f"test-{uuid.uuid4()}"
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        await run(
            client,
            queue,
            run_id=run_id,
            # The key pasted into the task and the model name, as a careless user might.
            task=f"Summarise this config: api key {SECRET}",
            model=f"local:{SECRET}",
            custom=Profile(n=3, k=2, t=0, m=2),
            seed=7,
        )
        history = await client.get_workflow_handle(run_id).fetch_history()
    run_dir = settings.runs_dir / run_id
    assert (run_dir / "candidates.jsonl").exists()
    assert "leaked [redacted]" in (run_dir / "candidates.jsonl").read_text()
    assert "[redacted]" in (run_dir / "config.json").read_text()
    assert files_containing(run_dir, SECRET) == []
    # History holds the input as given (the user put the key there), never a provider's echo.
    activity_results = [
        e for e in history.events if e.HasField("activity_task_completed_event_attributes")
    ]
    assert not history_contains(activity_results, f"leaked {SECRET}")
