"""Every failure class, Retry-After, bounded retries and JSON-mode fallback, over real HTTP."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import orjson
import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, anthropic_message, openai_completion
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK


@pytest.fixture
async def local(client: Client, settings: Settings, fake: FakeProvider) -> AsyncIterator[str]:
    """A worker whose ``local`` (OpenAI) and ``claude`` (Anthropic) endpoints are the fake."""
    settings = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, timeout_s=1.0)
    )
    settings = with_endpoint(settings, "claude", Endpoint(kind="anthropic", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


async def run_ask(client: Client, queue: str, model: str = "local:m", **kw: object) -> AskResult:
    return await client.execute_workflow(
        ASK,
        AskInput(question="hi", model=model, **kw),
        id=f"ask-{uuid.uuid4()}",
        task_queue=queue,
        result_type=AskResult,
    )


async def failure_of(client: Client, queue: str, model: str = "local:m") -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as info:
        await run_ask(client, queue, model)
    # Ask fails with the provider's code itself, not with a wrapped activity error.
    error = info.value.cause
    assert isinstance(error, ApplicationError)
    assert error.non_retryable
    return error


@pytest.mark.parametrize(
    ("reply", "error_type"),
    [
        (Reply(401, {"error": "bad key"}), "provider.auth"),
        (Reply(403, {"error": "forbidden"}), "provider.auth"),
        (Reply(400, {"error": {"message": "max_tokens too large"}}), "provider.bad_request"),
        (Reply(400, {"error": {"code": "content_policy_violation"}}), "provider.policy_refusal"),
        (
            Reply(200, openai_completion("no", finish_reason="content_filter")),
            "provider.policy_refusal",
        ),
        (Reply(200, raw=b"<html>oops</html>"), "provider.malformed_output"),
        (Reply(200, {"choices": []}), "provider.malformed_output"),
    ],
)
async def test_non_retryable_failures_fail_on_the_first_attempt(
    client: Client, local: str, fake: FakeProvider, reply: Reply, error_type: str
) -> None:
    fake.replies = [reply]
    error = await failure_of(client, local)
    assert error.type == error_type
    assert error.non_retryable
    assert len(fake.seen) == 1


async def test_a_failed_ask_writes_its_summary(
    client: Client, settings: Settings, local: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(401, {"error": "bad key"})]
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    with pytest.raises(WorkflowFailureError):
        await run_ask(client, local, run_id=run_id)
    summary = orjson.loads((settings.runs_dir / run_id / "summary.json").read_bytes())
    assert summary["status"] == "failed"
    assert summary["error"].startswith("provider.auth: ")


async def test_rate_limit_honours_retry_after(
    client: Client, local: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(429, {"error": "slow down"}, {"Retry-After": "3"})]
    result = await run_ask(client, local)
    first, second = fake.seen
    assert second.at - first.at >= 2.9  # the default first retry would come after 1 s
    assert result.response.transport_retries == 1
    assert first.call_id == second.call_id


async def test_transport_errors_retry_a_bounded_number_of_times(
    client: Client, local: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(503, {"error": "down"}, {"Retry-After": "0.1"}) for _ in range(10)]
    error = await failure_of(client, local)
    assert error.type == "provider.transport"
    assert len(fake.seen) == 6
    assert len({seen.call_id for seen in fake.seen}) == 1
    # Retry-After on a 503 is honoured too: five waits of ~0.1 s, not 1 + 2 + 4 + 8 + 16 s.
    assert fake.seen[-1].at - fake.seen[0].at < 10


async def test_timeout_is_retried(client: Client, local: str, fake: FakeProvider) -> None:
    fake.replies = [Reply(200, openai_completion("late"), delay_s=3.0)]
    result = await run_ask(client, local)
    assert result.response.text != "late"
    assert result.response.transport_retries == 1
    assert len(fake.seen) == 2


async def test_json_mode_falls_back_once_and_is_remembered(
    client: Client, settings: Settings, local: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(400, {"error": {"message": "response_format is not supported"}})]
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    result = await run_ask(client, local, json_mode=True, run_id=run_id)
    assert result.response.transport_retries == 1
    assert [("response_format" in seen.body) for seen in fake.seen] == [True, False]
    raw = [
        orjson.loads(line)
        for line in (settings.runs_dir / run_id / "raw-events.jsonl").read_bytes().splitlines()
    ]
    assert [event["response"]["status"] for event in raw] == [400, 200]
    again = await run_ask(client, local, json_mode=True)
    assert again.response.transport_retries == 0
    assert "response_format" not in fake.seen[-1].body


async def test_anthropic_messages_with_cache_tokens(
    client: Client, local: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(200, anthropic_message("bonjour"))]
    result = await run_ask(client, local, model="claude:claude-fake", system="be brief")
    assert result.response.text == "bonjour"
    assert result.response.usage.cache_hit_tokens == 7
    assert result.response.usage.input_tokens == 20
    (seen,) = fake.seen
    assert seen.path == "/v1/messages"
    assert seen.body["system"] == "be brief"
    assert seen.headers["anthropic-version"]


async def test_anthropic_rate_limit_and_auth(
    client: Client, local: str, fake: FakeProvider
) -> None:
    fake.replies = [
        Reply(429, {"error": "busy"}, {"Retry-After": "1"}),
        Reply(200, anthropic_message("ok")),
    ]
    result = await run_ask(client, local, model="claude:claude-fake")
    assert result.response.transport_retries == 1
    fake.replies = [Reply(401, {"error": "invalid x-api-key"})]
    error = await failure_of(client, local, model="claude:claude-fake")
    assert error.type == "provider.auth"


async def test_ponder_role_and_tag_headers_are_opt_in_per_endpoint(
    client: Client, settings: Settings, local: str, fake: FakeProvider
) -> None:
    await run_ask(client, local)
    (plain,) = fake.seen
    assert plain.call_id.endswith("/ask/0/0")  # the call id always goes
    assert "x-ponder-role" not in plain.headers
    labelled = with_endpoint(
        settings, "test", Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    )
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, labelled, WorkerOptions(task_queue=queue)):
        await run_ask(client, queue, model="test:m", role="generate")
    assert fake.seen[-1].headers["x-ponder-role"] == "generate"
