"""A served ``ponder ask`` (the embedded server up, its configuration's background worker live)
starts and awaits its run over the server's HTTP API, without loading the SDK, and prints what
the SDK path prints; a run that does not answer at once is handed to the SDK path, which follows
the same run (never a second one) and shows its retries as ever.

One server and background worker serve the whole module (the first ask, on the SDK path with a
worker of its own, leaves the worker). Whether a process loaded the SDK is read from its
``-X importtime`` lines: no hook in the command itself.
"""

from __future__ import annotations

import asyncio
import http.client
import re
import signal
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import to_json
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError
from temporalio.worker import Replayer

from activities.config import Endpoint, Settings, load_settings
from activities.providers.registry import _SPEC, resolve_model
from client.ask_cli import _started_here
from client.ask_http import Handover, _start, resolves_here
from client.connect import data_converter
from client.embedded import EmbeddedServer
from client.retry_lines import failed_attempts_in_json
from client.server_http import ServerHttp
from tests.cli import Done, cli_env, one_server
from tests.conftest import kill_processes_under
from tests.fakes import FakeProvider, Reply, openai_completion
from tests.served import loaded_sdk, ponder_importing, start_attributes
from worker.worker import WORKFLOWS
from workflows.activity_contracts import CALL_MODEL
from workflows.ask_types import AskInput
from workflows.names import ASK

pytestmark = [pytest.mark.slow]

QUESTION = "What is durable execution?"


@dataclass
class Served:
    home: Path
    env: dict[str, str]
    fake: FakeProvider
    client: Client
    first: Done
    """The module's first ask, before any background worker."""


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    home = tmp_path_factory.mktemp("served")
    fake = FakeProvider()
    (home / "ponder.toml").write_text(
        f'[providers.flaky]\nkind = "openai"\nbase_url = "{fake.url}/v1"\n'
    )
    # An idle period, as a user's commands have: the first ask leaves the background worker.
    env = cli_env(home, PONDER_SERVER_IDLE_S="60")
    try:
        async with one_server(home) as info:
            # The first leaves the background worker; the second is its first run (a worker's
            # first workflow task takes longer than the rest).
            first = await ask("warm-up", "--run-id", "warm-up", env=env)
            assert first.code == 0, first.err
            second = await ask("served-warm-up", "--run-id", "served-warm-up", env=env)
            assert second.code == 0, second.err
            client = await Client.connect(info.address, data_converter=_converter(home))
            yield Served(home, env, fake, client, first)
    finally:
        kill_processes_under(home)
        fake.close()


def _converter(home: Path):  # type: ignore[no-untyped-def]
    return data_converter(load_settings(home=str(home)))


async def ask(*args: str, env: dict[str, str]) -> Done:
    return await ponder_importing("ask", *args, env=env)


def printed(done: Done) -> list[str]:
    """What the command printed on stderr (its import lines left out)."""
    return [line for line in done.err.splitlines() if not line.startswith("import time:")]


def same_run(line: str, run_id: str) -> str:
    """A summary line with its run id and call latency (milliseconds vary) made neutral."""
    return re.sub(r", \d+ ms;", ", N ms;", line.replace(run_id, "RUN"))


async def test_a_served_ask_goes_over_http_and_prints_what_the_sdk_path_prints(
    served: Served,
) -> None:
    """The same question on both paths: the SDK path (forced by a secrets file, which the HTTP
    path leaves to it) and the HTTP path print the same answer and summary line."""
    secrets = served.home / "secrets.env"
    secrets.write_text("")
    through_sdk = await ask(
        QUESTION, "--run-id", "on-sdk", env={**served.env, "PONDER_SECRETS_FILE": str(secrets)}
    )
    over_http = await ask(QUESTION, "--run-id", "on-http", env=served.env)
    assert through_sdk.code == 0 and over_http.code == 0, (through_sdk.err, over_http.err)
    assert loaded_sdk(through_sdk) and not loaded_sdk(over_http)
    assert over_http.out == through_sdk.out
    assert over_http.out.startswith(f"Simulated answer to: {QUESTION}\n")
    (sdk_line,) = printed(through_sdk)
    (http_line,) = printed(over_http)
    assert same_run(http_line, "on-http") == same_run(sdk_line, "on-sdk")
    assert http_line.startswith("-- run on-http: sim:default (simulated)")

    # Started as the SDK starts a run: the start event differs in its ids and identity only.
    assert await start_attributes(served.client, "on-http") == await start_attributes(
        served.client, "on-sdk"
    )


async def test_a_history_started_over_http_replays_and_decodes_to_its_ask_input(
    served: Served,
) -> None:
    done = await ask("Replay me", "--seed", "3", "--run-id", "replayed", env=served.env)
    assert done.code == 0 and not loaded_sdk(done), done.err
    handle = served.client.get_workflow_handle("replayed")
    history = await handle.fetch_history()
    # Through JSON, as the saved histories of tests/test_replay.py are kept.
    history = WorkflowHistory.from_json("replayed", history.to_json())
    converter = _converter(served.home)
    replayer = Replayer(workflows=WORKFLOWS, data_converter=converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.workflow_type.name == ASK
    (decoded,) = converter.payload_converter.from_payloads(started.input.payloads, [AskInput])
    assert decoded == AskInput(question="Replay me", seed=3, run_id="replayed")


async def test_a_slow_served_ask_is_followed_through_the_sdk_once(served: Served) -> None:
    """A call that outlasts the wait: the SDK path takes the same run over (one run under the
    id, one answer printed)."""
    done = await ask(
        "Slow one", "--model", "sim:default,latency=fixed:2500", "--run-id", "slow",
        env=served.env,
    )  # fmt: skip
    assert done.code == 0, done.err
    assert loaded_sdk(done)
    assert done.out.count("Simulated answer to: Slow one") == 1
    (line,) = printed(done)
    assert line.startswith("-- run slow: sim:default,latency=fixed:2500 (simulated)")
    runs = [run async for run in served.client.list_workflows("WorkflowId = 'slow'")]
    assert len(runs) == 1


async def test_a_retried_served_call_shows_each_retry_line_once(served: Served) -> None:
    """Two attempts fail, then the third answers, once the second failure has shown. The first
    failure shows while the run is awaited over HTTP (a poll in, as on the SDK path); the SDK
    path that takes the run over goes on from the lines shown (the second failure is the same
    one again), and the answer prints once."""
    fake = served.fake
    busy = Reply(503, {"error": {"message": "busy"}})
    fake.replies = [busy, busy, Reply(body=openai_completion("Flaky answer"))]
    fake.hold_when = lambda _seen: len(fake.seen) >= 3
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-X", "importtime", "-m", "client", "ask", "Flaky one", "--model",
        "flaky:m", "--run-id", "flaky", env=served.env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None and process.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(90):
            while not any("attempt 2 of 6" in line for line in lines):
                line = (await process.stderr.readline()).decode()
                assert line, lines
                if not line.startswith("import time:"):
                    lines.append(line.rstrip("\n"))
    finally:
        fake.resume()
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    # Nothing shown twice: after the two lines, the summary alone.
    (summary,) = [line for line in err.decode().splitlines() if not line.startswith("import")]
    assert len(lines) == 2, lines
    assert lines[0].startswith("ponder: attempt 1 of 6 failed (provider.transport): ")
    # When the poll comes (the next attempt waits or runs) is the machine's.
    assert re.search(r"; attempt 2 (in 1s|runs) \(Ctrl-C detaches, the run goes on\)$", lines[0])
    assert re.fullmatch(
        r"ponder: attempt 2 of 6 failed the same way; attempt 3 (in 2s|runs)", lines[1]
    )
    assert out.decode() == "Flaky answer\n"
    assert summary.startswith("-- run flaky: flaky:fake-model, 12 in / 3 out tokens")


async def test_a_failed_served_ask_says_what_the_sdk_path_says(served: Served) -> None:
    """A run that fails at once (a refused key): the SDK path, which owns every failure's
    message, reports it, in the same line and exit code as when it started the run itself."""
    refused = Reply(401, {"error": {"message": "bad key"}})
    served.fake.replies = [refused, refused]
    secrets = served.home / "secrets.env"
    secrets.write_text("")
    through_sdk = await ask(
        "Refuse me", "--model", "flaky:m", "--run-id", "refused-sdk",
        env={**served.env, "PONDER_SECRETS_FILE": str(secrets)},
    )  # fmt: skip
    handed = await ask(
        "Refuse me", "--model", "flaky:m", "--run-id", "refused-http", env=served.env
    )
    assert through_sdk.code == handed.code == 1, (through_sdk.err, handed.err)
    (sdk_line,) = printed(through_sdk)
    (http_line,) = printed(handed)
    assert "401" in http_line and "refused-http" in http_line
    assert http_line.replace("refused-http", "RUN") == sdk_line.replace("refused-sdk", "RUN")
    assert handed.out == through_sdk.out == ""


@pytest.mark.parametrize(
    ("sig", "after_s"), [(signal.SIGINT, 0.0), (signal.SIGTERM, 0.0), (signal.SIGINT, 1.2)]
)
async def test_a_signal_while_awaited_detaches(served: Served, sig: int, after_s: float) -> None:
    """Ctrl-C or SIGTERM once the run exists (awaited over HTTP; ``after_s`` later, handed over
    to the SDK path, loading it or following) leaves the run going and exits 0, as on the SDK
    path."""
    run_id = f"detach-{sig}-{after_s:g}"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "client", "ask", "Leave me", "--model",
        "sim:default,latency=fixed:3000", "--run-id", run_id, env=served.env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    handle = served.client.get_workflow_handle(run_id)
    for _ in range(300):
        try:
            await handle.describe()
            break
        except RPCError:
            await asyncio.sleep(0.05)
    await asyncio.sleep(after_s)
    process.send_signal(sig)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert f"detached; the run goes on: ponder watch {run_id}" in err.decode()
    assert "Traceback" not in err.decode() and out == b""
    await handle.result()  # the background worker carried it on


class LosingProxy:
    """The server's HTTP API through a proxy that loses the answer to the first start: the
    server starts the run, the client sees the connection close."""

    def __init__(self, port: int) -> None:
        self.lost = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                upstream.request("POST", self.path, body=body, headers=dict(self.headers))
                answer = upstream.getresponse()
                data = answer.read()
                upstream.close()
                if not proxy.lost:
                    proxy.lost += 1
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _input_data(run_id: str) -> bytes:
    return to_json(AskInput(question="Once", run_id=run_id))


async def test_a_start_whose_answer_is_lost_is_sent_again_as_the_same_start(
    served: Served,
) -> None:
    """The start is sent again with its request id: the server answers with the run the
    first one started, and no second run starts."""
    info = EmbeddedServer(served.home).read_state()
    assert info is not None
    proxy = LosingProxy(info.http_port)
    try:
        api = ServerHttp(proxy.port, "default")
        queue = (await served.client.get_workflow_handle("served-warm-up").describe()).task_queue
        started = await asyncio.to_thread(
            _start, api, queue, "once", "me@here", _input_data("once"), workflow=ASK
        )
    finally:
        proxy.close()
    assert proxy.lost == 1
    description = await served.client.get_workflow_handle("once").describe()
    assert started == description.run_id
    runs = [run async for run in served.client.list_workflows("WorkflowId = 'once'")]
    assert len(runs) == 1
    # The id used by another start is refused (None: the SDK path starts it and says why).
    other = ServerHttp(info.http_port, "default")
    assert (
        await asyncio.to_thread(_start, other, queue, "once", "me@here", b"{}", workflow=ASK)
        is None
    )


async def test_the_sdk_path_knows_a_run_whose_start_answer_was_lost(served: Served) -> None:
    """A hand-over whose start may have landed: the run under its id is this command's only
    when its start carries the command's identity and input."""
    info = EmbeddedServer(served.home).read_state()
    assert info is not None
    api = ServerHttp(info.http_port, "default")
    queue = (await served.client.get_workflow_handle("served-warm-up").describe()).task_queue
    data = _input_data("maybe")
    assert await asyncio.to_thread(_start, api, queue, "maybe", "me@here", data, workflow=ASK)
    assert await _started_here(served.client, Handover("maybe", None, "me@here", data))
    assert not await _started_here(served.client, Handover("maybe", None, "you@there", data))
    assert not await _started_here(served.client, Handover("maybe", None, "me@here", b"{}"))
    assert not await _started_here(served.client, Handover("nowhere", None, "me@here", data))


def test_without_a_live_background_worker_an_ask_takes_the_sdk_path(served: Served) -> None:
    """The module's first ask: the server up, no background worker yet (it leaves one)."""
    assert served.first.code == 0
    assert loaded_sdk(served.first)
    assert served.first.out.startswith("Simulated answer to: warm-up\n")


def test_the_light_spec_form_is_the_registry_s() -> None:
    from client import ask_http

    assert ask_http._SPEC.pattern == _SPEC.pattern


HERE = {"sim:default", " sim:default", "sim:default,latency=fixed:2500", "keyed:m"}
"""The specs of ``test_a_spec_resolves_here_only_if_the_registry_resolves_it`` the HTTP path
takes; the SDK path resolves (or refuses) the others."""


@pytest.mark.parametrize(
    "spec",
    [
        *sorted(HERE),
        "sim:default,accuracy=7",
        "sim:default,nonsense=1",
        "openai:gpt-4o-mini",
        "nokey:m",
        "replay:ask-1",
        "command:x",
        "unknown:m",
        "no-colon",
        "sim: default",
        "1x:m",
    ],
)
def test_a_spec_resolves_here_only_if_the_registry_resolves_it(
    spec: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``resolves_here`` says yes only to what ``resolve_model`` (as ``ponder ask`` calls it in
    embedded mode, keys required) resolves: the HTTP path never starts a run the SDK path
    would refuse."""
    monkeypatch.setenv("SERVED_KEY", "sk-x")
    for name in ("SERVED_MISSING_KEY", "OPENAI_API_KEY", "PONDER_SECRETS_FILE"):
        monkeypatch.delenv(name, raising=False)
    providers = {
        **settings.providers,
        "keyed": Endpoint(kind="openai", base_url="http://x/v1", api_key_env="SERVED_KEY"),
        "nokey": Endpoint(kind="openai", base_url="http://x/v1", api_key_env="SERVED_MISSING_KEY"),
        "1x": Endpoint(kind="sim"),
    }
    settings = settings.model_copy(update={"providers": providers})
    assert resolves_here(spec, settings) == (spec in HERE)
    if spec in HERE:
        resolve_model(spec, settings, require_key=True)


def test_no_spec_resolves_here_with_a_secrets_file(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PONDER_SECRETS_FILE", "/nonexistent/secrets.env")
    assert not resolves_here("sim:default", settings)


def test_failed_attempts_read_from_json_as_from_the_sdk() -> None:
    """The HTTP API's JSON of a pending model call gives the attempt the SDK's does."""
    pending = [
        {
            "activityId": "1",
            "activityType": {"name": CALL_MODEL},
            "state": "PENDING_ACTIVITY_STATE_SCHEDULED",
            "attempt": 3,
            "maximumAttempts": 6,
            "lastFailure": {
                "message": "nothing listens",
                "applicationFailureInfo": {"type": "provider.transport"},
            },
            "currentRetryInterval": "2s",
        },
        {  # running its next attempt: no interval
            "activityId": "2",
            "activityType": {"name": CALL_MODEL},
            "state": "PENDING_ACTIVITY_STATE_STARTED",
            "attempt": 2,
            "lastFailure": {"message": "busy"},
        },
        {"activityId": "3", "activityType": {"name": CALL_MODEL}, "attempt": 1},
        {
            "activityId": "4",
            "activityType": {"name": "write_run_files"},
            "state": "PENDING_ACTIVITY_STATE_SCHEDULED",
            "attempt": 3,
            "lastFailure": {"message": "x"},
        },
    ]
    first, second = failed_attempts_in_json(pending, "run")
    assert (first.call, first.attempt, first.maximum, first.code, first.next_in_s) == (
        "run/1", 2, 6, "provider.transport", 2.0,
    )  # fmt: skip
    assert (second.call, second.attempt, second.maximum, second.code, second.next_in_s) == (
        "run/2", 1, 0, "", None,
    )  # fmt: skip
