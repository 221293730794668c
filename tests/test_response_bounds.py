"""A provider's answer is bounded: a body over 1 MiB is ``provider.response_too_large`` (read as a
stream, never held whole), and model output parsed as JSON is at most 131,072 characters.

Real HTTP against the local fake OpenAI server (tests/fakes.py) and a real worker; the parsers
are checked directly.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.bounds import MAX_JSON_CHARS, MAX_RESPONSE_BYTES
from workflows.names import ASK
from workflows.plan.refs import extract_json
from workflows.tournament.judge_parse import JudgeParseError, parse_judge_output

ROOT = Path(__file__).resolve().parents[1]
VERDICT = json.dumps({"feedback_a": "ok", "feedback_b": "no", "winner": "A", "confidence": 0.9})


@pytest.fixture
async def local(client: Client, settings: Settings, fake: FakeProvider) -> AsyncIterator[str]:
    settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


async def ask(client: Client, queue: str) -> AskResult:
    return await client.execute_workflow(
        ASK,
        AskInput(question="judge these", model="local:m", role="judge"),
        id=f"big-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=AskResult,
    )


async def too_large(client: Client, queue: str) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as info:
        await ask(client, queue)
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "provider.response_too_large"
    assert "a body over 1048576 bytes (1 MiB)" in cause.message
    return cause


async def test_the_issues_padded_verdict_is_refused_at_once(
    client: Client, local: str, fake: FakeProvider
) -> None:
    # 1,048,577 characters of padding, then a valid verdict: parsed into a verdict before.
    fake.replies.append(Reply(body=openai_completion(" " * 1_048_577 + VERDICT)))
    await too_large(client, local)
    assert len(fake.seen) == 1  # not retried: the same endpoint would send the same


async def test_a_body_without_a_length_is_read_no_further_than_the_bound(
    client: Client, local: str, fake: FakeProvider, settings: Settings
) -> None:
    # 64 MiB delimited only by the connection closing: the worker stops at 1 MiB and hangs up.
    huge = b'{"choices": [{"message": {"content": "' + b"x" * (64 * 1024 * 1024) + b'"}}]}'
    fake.replies.append(Reply(raw=huge, no_length=True))
    await too_large(client, local)
    # The worker hung up at the bound: the fake never finished sending (an event, not a clock).
    assert fake.bodies_cut == 1 and fake.bodies_sent == 0
    (run_dir,) = [d for d in settings.runs_dir.iterdir() if not d.name.startswith(".")]
    lines = (run_dir / "raw-events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert events[-1]["response"]["error"] == (
        f"provider.response_too_large: over {MAX_RESPONSE_BYTES} bytes, not read"
    )


async def test_a_body_of_exactly_the_bound_is_answered(
    client: Client, local: str, fake: FakeProvider
) -> None:
    envelope = len(json.dumps(openai_completion("y" * MAX_RESPONSE_BYTES))) - MAX_RESPONSE_BYTES
    text = "y" * (MAX_RESPONSE_BYTES - envelope)
    assert len(json.dumps(openai_completion(text))) == MAX_RESPONSE_BYTES  # exactly the bound
    fake.replies.append(Reply(body=openai_completion(text), no_length=True))
    result = await ask(client, local)
    assert result.response.text == text


def test_judge_output_is_parsed_from_at_most_131072_characters() -> None:
    padded = " " * (MAX_JSON_CHARS - len(VERDICT)) + VERDICT
    assert parse_judge_output(padded).winner == "A"
    with pytest.raises(JudgeParseError) as info:
        parse_judge_output(" " + padded)
    assert info.value.reason == "too_long"
    assert f"judge output is {MAX_JSON_CHARS + 1} characters, over the {MAX_JSON_CHARS}" in str(
        info.value
    )


def test_a_plan_steps_json_output_is_parsed_from_at_most_131072_characters() -> None:
    value = json.dumps({"items": ["a" * (MAX_JSON_CHARS - 20)]})
    assert len(value) <= MAX_JSON_CHARS and extract_json(value)["items"]
    with pytest.raises(ValueError, match=f"over the {MAX_JSON_CHARS} parsed as JSON"):
        extract_json(" " * MAX_JSON_CHARS + value)


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # 64 MiB on stdout: killed at 1 MiB, never held whole.
        ("import sys\nfor _ in range(1024): sys.stdout.write('x' * 65536)\n", None),
        # Megabytes on stderr only keep their tail; the answer is the stdout.
        ("import sys\nsys.stderr.write('e' * 8_000_000)\nprint('ok')\n", "ok\n"),
    ],
    ids=["stdout", "stderr"],
)
async def test_a_command_agents_output_is_bounded_like_a_body(
    client: Client, settings: Settings, tmp_path: Path, script: str, expected: str | None
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(script)
    endpoint = Endpoint(kind="command", argv=[sys.executable, str(agent)], timeout_s=60)
    settings = with_endpoint(settings, "agent", endpoint)
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        run = client.execute_workflow(
            ASK,
            AskInput(question="q", model="agent:x"),
            id=f"agent-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=AskResult,
        )
        if expected is not None:
            assert (await run).response.text == expected
            return
        with pytest.raises(WorkflowFailureError) as info:
            await run
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "provider.response_too_large"
    assert "printed more than 1048576 bytes" in cause.message


async def test_a_gzip_bomb_is_refused_by_its_decoded_size(
    client: Client, local: str, fake: FakeProvider
) -> None:
    # 256 MiB of JSON text in ~250 KiB of gzip: the bound is on what is decoded, chunk by chunk.
    text = b'{"choices": [{"message": {"content": "' + b"x" * (256 * 1024 * 1024) + b'"}}]}'
    bomb = gzip.compress(text, compresslevel=9)
    assert len(bomb) < MAX_RESPONSE_BYTES
    del text
    fake.replies.append(Reply(raw=bomb, headers={"content-encoding": "gzip"}))
    await too_large(client, local)
    assert fake.seen[-1].headers["accept-encoding"] == "identity"  # asked for, not honoured


def test_refusing_a_gzip_bomb_allocates_little() -> None:
    # In a fresh interpreter (tests/bomb_memory.py says why). httpx's own decoder inflates a
    # whole network chunk at once: tens of MiB for this bomb.
    done = subprocess.run(
        [sys.executable, "-m", "tests.bomb_memory"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    peak = int(done.stdout.split()[-1])
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB allocated while refusing the bomb"


async def test_an_honest_gzip_answer_is_decoded(
    client: Client, local: str, fake: FakeProvider
) -> None:
    body = gzip.compress(json.dumps(openai_completion("compressed but fine")).encode())
    fake.replies.append(Reply(raw=body, headers={"content-encoding": "gzip"}))
    result = await ask(client, local)
    assert result.response.text == "compressed but fine"
