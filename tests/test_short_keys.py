"""A provider key too short to redact safely: the answer comes back whole, the key is still used,
secret-named fields are still redacted, and the worker says so at start.

A one-character key (``LOCAL_KEY=k``) once turned "fake says hi" into "fa[redacted]e says hi"
in the answer, its file and the run's history.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings, load_settings, short_secret_names
from activities.raw_events import MIN_REDACTED_CHARS, REDACTED, redact
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK

ANSWER = "fake says hi, keep it known"


def test_a_short_secret_is_not_searched_for_and_a_long_one_is() -> None:
    assert redact(ANSWER, ["k"]) == ANSWER
    assert redact(ANSWER, ["k" * (MIN_REDACTED_CHARS - 1), "fake"]) == ANSWER
    long = "sk-" + "q" * (MIN_REDACTED_CHARS - 3)  # exactly MIN_REDACTED_CHARS
    assert redact(f"key {long}!", [long, "k"]) == f"key {REDACTED}!"
    # A secret-named field is redacted whatever its value's length.
    assert redact({"authorization": "Bearer k", "text": ANSWER}, ["k"]) == {
        "authorization": REDACTED,
        "text": ANSWER,
    }


def test_short_keys_are_named_and_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINY_LOCAL_KEY", "k")
    monkeypatch.setenv("REAL_LOCAL_KEY", "sk-" + "z" * 40)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("TEMPORAL_API_KEY", raising=False)
    config = tmp_path / "ponder.toml"
    config.write_text(
        '[providers.tiny]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
        'api_key_env = "TINY_LOCAL_KEY"\n'
        '[providers.real]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
        'api_key_env = "REAL_LOCAL_KEY"\n'
    )
    settings = load_settings(config, home=str(tmp_path / "h"))
    assert short_secret_names(settings) == ["TINY_LOCAL_KEY"]


async def test_a_one_character_key_leaves_the_answer_whole(
    client: Client, settings: Settings, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_KEY", "k")
    endpoint = Endpoint(kind="openai", base_url=fake.url, api_key_env="LOCAL_KEY")
    settings = with_endpoint(settings, "local", endpoint)
    fake.replies = [Reply(200, openai_completion(ANSWER))]
    queue = f"test-{uuid.uuid4()}"
    run_id = f"ask-short-key-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            ASK,
            AskInput(question="hi", model="local:m", run_id=run_id),
            id=run_id,
            task_queue=queue,
            result_type=AskResult,
        )
        result = await handle.result()
    assert fake.seen[0].headers["authorization"] == "Bearer k"  # the key was used
    assert result.response.text == ANSWER
    run_dir = settings.runs_dir / run_id
    assert (run_dir / "artifacts" / "answer.txt").read_text() == ANSWER
    raw = (run_dir / "raw-events.jsonl").read_text()
    assert ANSWER in raw and "fa[redacted]e" not in raw
    assert "Bearer k" not in raw  # the header is secret-named: redacted whatever its length
