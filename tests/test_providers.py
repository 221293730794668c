"""Every failure class, Retry-After, bounded retries and JSON-mode fallback, over real HTTP."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings, check_base_url
from activities.errors import ConfigError
from activities.model_types import CallModelInput, ModelRequest
from activities.providers import resolve_model
from tests.call_once import CallModelOnce, call_worker
from tests.cli import cli_env, ponder_here
from tests.conftest import with_endpoint
from tests.fakes import (
    FakeProvider,
    Reply,
    Seen,
    anthropic_message,
    openai_completion,
    sim_responder,
)
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK, TOURNAMENT
from workflows.tournament.profiles import Profile
from workflows.tournament.types import TournamentInput, TournamentResult


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
        id=str(kw.get("run_id") or f"ask-{uuid.uuid4()}"),  # a run's id is its workflow id
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


@pytest.mark.parametrize(
    "broken",
    [
        Reply(200, raw=b"<html><body>502 Bad Gateway</body></html>"),
        Reply(200, {}),
        Reply(200, {"choices": []}),
        Reply(200, raw=b'{"id": "cmpl-1", "choices": [{"message": {"content": "trunc'),
    ],
    ids=["html", "empty-object", "no-choices", "truncated"],
)
async def test_a_broken_envelope_is_a_transport_fault_and_retried(
    client: Client, local: str, fake: FakeProvider, broken: Reply
) -> None:
    fake.replies = [broken]
    result = await run_ask(client, local)
    assert result.response.transport_retries == 1
    assert len(fake.seen) == 2
    assert fake.seen[0].call_id == fake.seen[1].call_id
    assert "[sim q=" in result.response.text


async def test_a_broken_anthropic_envelope_is_retried(
    client: Client, local: str, fake: FakeProvider
) -> None:
    fake.replies = [Reply(200, {"type": "error"}), Reply(200, anthropic_message("ok"))]
    result = await run_ask(client, local, model="claude:claude-fake")
    assert result.response.text == "ok"
    assert result.response.transport_retries == 1


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


def refuses_json_mode(seen: Seen) -> Reply:
    """An endpoint that refuses ``response_format`` on every request and answers the rest."""
    if "response_format" in seen.body:
        return Reply(400, {"error": {"message": "response_format is not supported"}})
    return sim_responder(seen)


async def test_json_mode_falls_back_per_call_the_same_on_every_worker(
    client: Client, settings: Settings, local: str, fake: FakeProvider
) -> None:
    """No worker learns from what it met: each call sends JSON mode, then the plain fallback,
    so a young and an old worker send the same requests for the same call."""
    fake.responder = refuses_json_mode
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    result = await run_ask(client, local, json_mode=True, run_id=run_id)
    assert result.response.transport_retries == 1
    assert [("response_format" in seen.body) for seen in fake.seen] == [True, False]
    raw = [
        orjson.loads(line)
        for line in (settings.runs_dir / run_id / "raw-events.jsonl").read_bytes().splitlines()
    ]
    assert [event["response"]["status"] for event in raw] == [400, 200]
    first = [seen.body for seen in fake.seen]

    # The same call again on this worker, then on a fresh one: the same two requests each time.
    again = await run_ask(client, local, json_mode=True)
    assert again.response.transport_retries == 1
    assert [seen.body for seen in fake.seen[2:]] == first
    fresh = f"test-{uuid.uuid4()}"
    fresh_settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    async with running_worker(client, fresh_settings, WorkerOptions(task_queue=fresh)):
        other = await run_ask(client, fresh, json_mode=True)
    assert other.response.text == result.response.text
    assert [seen.body for seen in fake.seen[4:]] == first


async def test_an_endpoint_declared_without_json_mode_never_sends_response_format(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    fake.responder = refuses_json_mode
    plain = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, json_mode=False)
    )
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, plain, WorkerOptions(task_queue=queue)):
        result = await run_ask(client, queue, json_mode=True)
    assert result.response.transport_retries == 0
    (seen,) = fake.seen
    assert "response_format" not in seen.body


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


@pytest.mark.parametrize("retry_after", ["60", "400"], ids=["past-deadline", "over-300s"])
async def test_a_long_retry_after_becomes_retry_later(
    client: Client, settings: Settings, fake: FakeProvider, retry_after: str
) -> None:
    """The activity's half of the long Retry-After contract (the workflow then sleeps)."""
    settings = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    fake.replies = [Reply(429, {"error": "quota"}, {"Retry-After": retry_after})]
    queue = f"test-{uuid.uuid4()}"
    async with call_worker(client, settings, queue):
        request = ModelRequest(model="local:m", prompt="hi")
        run_id = f"once-{uuid.uuid4()}"  # the activity writes only its workflow's run
        outcome = await client.execute_workflow(
            CallModelOnce,
            CallModelInput(run_id=run_id, phase="ask", index=0, request=request),
            id=run_id,
            task_queue=queue,
            result_type=dict,
        )
    assert outcome["type"] == "provider.retry_later"
    assert outcome["non_retryable"] is True
    assert outcome["details"][0]["retry_after_s"] == float(retry_after)
    assert len(fake.seen) == 1  # not retried inside the activity's schedule


async def test_failed_calls_record_their_transport_retries(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    settings = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    )
    fake.responder = lambda seen: Reply(500, {"error": "down"}, {"Retry-After": "0.05"})
    queue = f"test-{uuid.uuid4()}"
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            TOURNAMENT,
            TournamentInput(task="x", model="local:m", custom=Profile(n=2, k=1, t=0, m=1)),
            id=run_id,
            task_queue=queue,
            result_type=TournamentResult,
        )
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert isinstance(info.value.cause, ApplicationError)
    assert info.value.cause.type == "provider.transport"
    run_dir = settings.runs_dir / run_id
    rows = [orjson.loads(line) for line in (run_dir / "usage.jsonl").read_bytes().splitlines()]
    failed = [row for row in rows if row["outcome"] == "failed"]
    assert failed
    attempts = {seen.call_id: 0 for seen in fake.seen}
    for seen in fake.seen:
        attempts[seen.call_id] += 1
    for row in failed:
        assert row["transport_retries"] == attempts[row["usage_id"]] - 1 == 5
    summary = orjson.loads((run_dir / "summary.json").read_bytes())
    assert summary["usage"]["transport_retries"] == 5 * len(failed)

    # A failed Ask records them in its summary too.
    ask_id = f"ask-{uuid.uuid4().hex[:8]}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        with pytest.raises(WorkflowFailureError):
            await client.execute_workflow(
                ASK, AskInput(question="hi", model="local:m"), id=ask_id, task_queue=queue
            )
    ask_summary = orjson.loads((settings.runs_dir / ask_id / "summary.json").read_bytes())
    assert ask_summary["status"] == "failed"
    assert ask_summary["transport_retries"] == 5


async def test_a_malformed_base_url_is_refused_before_anything_runs(
    client: Client, worker_queue: str
) -> None:
    for url in ["not-a-url", "ftp://host/v1", "http://", "http://host:port/v1", "http://h/v1?x=1"]:
        with pytest.raises(ConfigError, match="base URL"):
            check_base_url(url)
    assert check_base_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    # Through workflow input: refused by the activity with a code, not retried.
    with pytest.raises(WorkflowFailureError) as info:
        await run_ask(client, worker_queue, model="openai:gpt-4o-mini", base_url="not-a-url")
    assert isinstance(info.value.cause, ApplicationError)
    assert info.value.cause.type == "provider.config"


def test_a_malformed_base_url_is_refused_by_the_cli_before_a_server_starts(tmp_path: Path) -> None:
    """Through the CLI and the config file: exit 2 before a server or run is touched, so checked
    in this process (``ponder_here``, which fails on a command that connects)."""
    home = tmp_path / "home"
    done = ponder_here("ask", "hi", "--base-url", "not-a-url", env=cli_env(home))
    assert done.code == 2, done.err
    assert "base URL 'not-a-url'" in done.err
    config = tmp_path / "ponder.toml"
    config.write_text('[providers.bad]\nkind = "openai"\nbase_url = "localhost:8000"\n')
    env = cli_env(home, PONDER_CONFIG=str(config))
    done = ponder_here("ask", "hi", "--model", "bad:m", env=env)
    assert done.code == 2, done.err
    assert "providers.bad.base_url" in done.err
    assert not (home / "server.json").exists()


def test_a_configured_provider_with_its_key_unset_is_refused(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UNSET_PROVIDER_KEY", raising=False)
    endpoint = Endpoint(
        kind="openai", base_url="http://127.0.0.1:9/v1", api_key_env="UNSET_PROVIDER_KEY"
    )
    with pytest.raises(ConfigError, match="UNSET_PROVIDER_KEY"):
        resolve_model("keyed:m", with_endpoint(settings, "keyed", endpoint))
    config = tmp_path / "ponder.toml"
    config.write_text(
        '[providers.keyed]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "UNSET_PROVIDER_KEY"\n'
    )
    env = cli_env(tmp_path / "home", PONDER_CONFIG=str(config))
    done = ponder_here("ask", "hi", "--model", "keyed:m", env=env)  # refused before connecting
    assert done.code == 2, done.err
    assert "needs an API key: set UNSET_PROVIDER_KEY" in done.err
