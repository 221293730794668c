"""A model endpoint where nothing listens: the refused attempt shows at once, naming the URL and
what to start, its retries show as they happen, and the run still ends with its code (or, when
the server is started meanwhile, with the answer)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflow.v1 import PendingActivityInfo

from activities.config import Endpoint
from activities.errors import TransportError
from activities.providers.base import CallContext
from activities.providers.http import (
    connection_refused,
    is_loopback,
    shown_url,
    transport_failure,
)
from activities.providers.openai import OpenAIProvider
from activities.raw_events import RawEventLog
from client.call_progress import FailedAttempt, RetryLines, failed_attempts
from client.exit_codes import EXIT_FAILED
from tests.cli import cli_env, finish, one_server, start_ponder
from tests.fakes import FakeProvider, Reply, Seen, openai_completion
from workflows.activity_contracts import CALL_MODEL
from workflows.model_calls import MODEL_RETRY_POLICY
from workflows.model_types import ModelRequest

KEY = "sk-local-secret-0123456789"
PASSWORD = "pw-in-the-url-0123456789"
REFUSED = "nothing listens at"


def closed_port() -> int:
    """A loopback port nothing listens on (bound for a moment to find a free one, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def hanging_up() -> Iterator[int]:
    """A loopback port that accepts a connection and closes it at once: no refusal, no answer."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                connection.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def context(http: httpx.AsyncClient, base_url: str, tmp_path: Path) -> CallContext:
    return CallContext(
        call_id="r/ask/0/0",
        call_key="ask/0",
        run_id="r",
        phase="ask",
        attempt=0,
        provider_name="local",
        model_name="llama3",
        endpoint=Endpoint(kind="openai", base_url=base_url),
        api_key=KEY,
        http=http,
        raw_events=RawEventLog(tmp_path / "raw-events.jsonl", secrets=[KEY], base={}),
    )


async def transport_error(base_url: str, tmp_path: Path) -> TransportError:
    async with httpx.AsyncClient() as http:
        ctx = context(http, base_url, tmp_path)
        with pytest.raises(TransportError) as caught:
            await OpenAIProvider().request(ModelRequest(model="local:llama3", prompt="hi"), ctx)
    return caught.value


async def test_a_refused_loopback_connection_names_the_url_and_what_to_start(
    tmp_path: Path,
) -> None:
    port = closed_port()
    error = await transport_error(f"http://user:{PASSWORD}@127.0.0.1:{port}/v1", tmp_path)
    assert error.message == (
        f"nothing listens at http://127.0.0.1:{port}/v1 (connection refused, provider local): "
        "start your server (ollama serve, vllm serve, llama-server ...) or fix base_url"
    )
    assert error.retryable and error.error_type == "provider.transport"  # still retried
    assert PASSWORD not in error.message and KEY not in error.message
    # The attempt is on record as before: the raw event says what the transport raised.
    (event,) = [
        json.loads(line) for line in (tmp_path / "raw-events.jsonl").read_text().splitlines()
    ]
    assert event["error"].startswith("transport: ConnectError(")


async def test_a_connection_that_is_not_refused_keeps_its_own_message(tmp_path: Path) -> None:
    with hanging_up() as port:
        error = await transport_error(f"http://127.0.0.1:{port}/v1", tmp_path)
    assert REFUSED not in error.message
    assert error.message.startswith(
        f"local at http://127.0.0.1:{port}/v1/chat/completions unreachable: "
    )
    assert error.retryable


async def test_a_refused_remote_endpoint_is_not_told_to_start_a_local_server(
    tmp_path: Path,
) -> None:
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError) as caught:
            await http.post(f"http://127.0.0.1:{closed_port()}/v1/chat/completions")
        assert connection_refused(caught.value)
        remote = context(http, "https://llm.example.com/v1", tmp_path)
        error = transport_failure(remote, "https://llm.example.com/v1/chat", caught.value)
    assert error.message == (
        "nothing listens at https://llm.example.com/v1 (connection refused, provider local): "
        "check that the server is up and base_url is right"
    )


def test_only_this_machine_is_loopback() -> None:
    for url in (
        "http://localhost:1/v1",
        "http://127.0.0.7:1",
        "http://[::1]:1/v1",
        "http://a.localhost",
    ):
        assert is_loopback(url), url
    for url in ("http://10.0.0.1:1", "https://api.openai.com/v1", "http://[2001:db8::1]:1"):
        assert not is_loopback(url), url


def test_user_info_is_never_shown() -> None:
    assert shown_url("http://u:secret@127.0.0.1:8/v1") == "http://127.0.0.1:8/v1"
    assert shown_url("http://u:secret@[::1]/v1") == "http://[::1]/v1"
    assert shown_url("https://host.example/v1") == "https://host.example/v1"


def pending(
    attempt: int, state: PendingActivityState.ValueType, **kw: object
) -> PendingActivityInfo:
    info = PendingActivityInfo(
        activity_id=str(kw.get("id", "1")),
        state=state,
        attempt=attempt,
        maximum_attempts=6,
    )
    info.activity_type.name = str(kw.get("name", CALL_MODEL))
    if attempt > 1:
        info.last_failure.message = str(kw.get("message", "nothing listens at X"))
        info.last_failure.application_failure_info.type = "provider.transport"
        info.current_retry_interval.FromTimedelta(timedelta(seconds=2 ** (attempt - 2)))
    return info


WAITING = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
RUNNING = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED


def test_a_call_between_attempts_is_a_failed_attempt_and_its_next() -> None:
    assert failed_attempts([pending(1, RUNNING)]) == []  # the first attempt runs: nothing failed
    assert failed_attempts([pending(3, WAITING, name="write_run_files")]) == []
    assert failed_attempts([pending(3, WAITING)]) == [
        FailedAttempt("1", 2, 6, "provider.transport", "nothing listens at X", 2.0)
    ]
    (running,) = failed_attempts([pending(3, RUNNING)])
    assert (running.attempt, running.next_in_s) == (2, None)


def test_each_failed_attempt_is_one_line_and_a_repeat_is_short() -> None:
    lines = RetryLines()
    first = lines.lines(failed_attempts([pending(2, WAITING)]))
    assert first == [
        "attempt 1 of 6 failed (provider.transport): nothing listens at X; attempt 2 in 1s "
        "(Ctrl-C detaches, the run goes on)"
    ]
    assert lines.lines(failed_attempts([pending(2, WAITING)])) == []  # seen: not again
    assert lines.lines(failed_attempts([pending(3, WAITING)])) == [
        "attempt 2 of 6 failed the same way; attempt 3 in 2s"
    ]
    assert lines.lines(failed_attempts([pending(4, RUNNING, message="HTTP 503")])) == [
        "attempt 3 of 6 failed (provider.transport): HTTP 503; attempt 4 runs"
    ]
    # Another call of the same run has lines of its own, and so has a call of the run the
    # chain continued into, whose activity ids start again.
    assert lines.lines(failed_attempts([pending(2, WAITING, id="2")]))[0].startswith("attempt 1 ")
    assert lines.lines(failed_attempts([pending(2, WAITING)], "run-2"))[0].startswith("attempt 1 ")
    assert lines.lines(failed_attempts([pending(2, WAITING)], "run-2")) == []


def test_a_failure_cannot_drive_the_terminal() -> None:
    (line,) = RetryLines().lines(failed_attempts([pending(2, WAITING, message="a\x1b[2Jb\nc")]))
    assert "a\\x1b[2Jb\\nc;" in line and "\x1b" not in line and "\n" not in line


def answer(seen: Seen) -> Reply:
    return Reply(body=openai_completion("Started in time.", model=str(seen.body["model"])))


async def next_line(stream: asyncio.StreamReader, timeout: float) -> str:
    line = (await asyncio.wait_for(stream.readline(), timeout)).decode()
    assert line, "the command ended early"
    return line.rstrip("\n")


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_real_ask_at_a_closed_port_says_so_at_once_and_ends_with_its_code(
    tmp_path: Path,
) -> None:
    """Two asks side by side, each of its own configuration (so its own task queue) on one
    server: one whose server never comes, ending with its code once the retries run out; one
    whose server is started after the first refusal, answered by the next attempt."""
    home = tmp_path / "home"
    never, later = closed_port(), closed_port()
    while later == never:
        later = closed_port()
    configs = {}
    for name, port, user in (("never", never, f"u:{PASSWORD}@"), ("later", later, "")):
        configs[name] = tmp_path / f"{name}.toml"
        configs[name].write_text(
            f'[providers.local]\nkind = "openai"\nbase_url = "http://{user}127.0.0.1:{port}/v1"\n'
            'api_key_env = "LOCAL_KEY"\n'
        )
    env = cli_env(home, LOCAL_KEY=KEY)
    async with one_server(home):
        asks = {
            name: await start_ponder(
                "ask", "Hi", "--model", "local:llama3", "--config", str(config), env=env
            )
            for name, config in configs.items()
        }
        try:
            started = None
            for name, port in (("later", later), ("never", never)):
                stderr = asks[name].stderr
                assert stderr is not None
                first = await next_line(stderr, 90)  # a cold process start under load
                assert first == (
                    f"ponder: attempt 1 of 6 failed (provider.transport): {REFUSED} "
                    f"http://127.0.0.1:{port}/v1 (connection refused, provider local): start "
                    "your server (ollama serve, vllm serve, llama-server ...) or fix base_url; "
                    "attempt 2 in 1s (Ctrl-C detaches, the run goes on)"
                )
                assert asks[name].returncode is None  # shown while the call waits, not at its end
                if name == "later":
                    started = FakeProvider(answer, port=later)
            assert started is not None
            try:
                answered = await finish(asks["later"], timeout=60)
            finally:
                started.close()
            assert answered.code == 0, answered.err
            assert answered.out == "Started in time.\n"
            assert [s.body["model"] for s in started.seen] == ["llama3"]

            stderr = asks["never"].stderr
            assert stderr is not None
            maximum = MODEL_RETRY_POLICY.maximum_attempts
            for attempt in range(2, maximum):
                line = await next_line(stderr, 60)
                assert line == (
                    f"ponder: attempt {attempt} of {maximum} failed the same way; attempt "
                    f"{attempt + 1} in {2 ** (attempt - 1)}s"
                )
            failed = await finish(asks["never"], timeout=60)
        finally:
            for process in asks.values():
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    assert failed.code == EXIT_FAILED, failed.err
    (last,) = failed.err.splitlines()  # the rest was read above
    assert last.startswith("ponder: provider.transport: run ask-")
    assert last.endswith(
        f"failed: {REFUSED} http://127.0.0.1:{never}/v1 (connection refused, provider local): "
        "start your server (ollama serve, vllm serve, llama-server ...) or fix base_url"
    )
    for text in (failed.out, failed.err, answered.out, answered.err):
        assert KEY not in text and PASSWORD not in text


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_tournament_shows_its_refused_calls_above_the_panel_and_goes_on(
    tmp_path: Path,
) -> None:
    """Calls that fail alike share one line; once the server listens, the run completes."""
    home, port = tmp_path / "home", closed_port()
    config = tmp_path / "local.toml"
    config.write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        "ponder_headers = true\n"
    )
    think = await start_ponder(
        "think", "Name a prime", "--profile", "quick", "--model", "local:default",
        "--config", str(config), env=cli_env(home),
    )  # fmt: skip
    assert think.stderr is not None
    fake = None
    try:
        first = (await next_line(think.stderr, 90)).removeprefix("ponder: ")
        count, shared, line = first.partition(" calls: ")  # the round's calls, refused alike
        if shared:
            assert int(count) > 1
        else:  # one call alone in its poll
            line = first
        assert line == (
            f"attempt 1 of 6 failed (provider.transport): {REFUSED} http://127.0.0.1:{port}/v1 "
            "(connection refused, provider local): start your server (ollama serve, vllm serve, "
            "llama-server ...) or fix base_url; attempt 2 in 1s (Ctrl-C detaches, the run goes on)"
        )
        fake = FakeProvider(port=port)
        done = await finish(think, timeout=120)
    finally:
        if fake is not None:
            fake.close()
        if think.returncode is None:
            think.kill()
            await think.wait()
    assert done.code == 0, done.err
    assert "winner: " in done.err
    assert fake.seen, "the server started meanwhile answered the calls"
