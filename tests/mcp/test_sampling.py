"""The MCP sampling provider: ``mcp:<hint>`` runs answered by the host of a connected session,
driven by the SDK's own client answering ``sampling/createMessage`` over stdio."""

from __future__ import annotations

import asyncio
import json
import stat
import uuid
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client as MCPClient
from mcp.client.session import ClientRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from activities.errors import ConfigError
from activities.providers import resolve_model
from activities.providers.sampling import SampleRequest
from activities.routes import SESSION_SECRET_FILE, session_secret
from tests.cli import cli_env, ponder
from tests.mcp.helpers import serving, stdio_client, structured
from workflows.ask_types import AskInput
from workflows.call_options import SESSION_SECRET, CallOptions, session_task_queue
from workflows.inputs import InputInvalid, decode_input
from workflows.model_calls import PROVIDER_SESSION_GONE
from workflows.names import ASK, QUERY_PROGRESS, TOURNAMENT
from workflows.tournament.profiles import BUILTIN_PROFILES, Profile
from workflows.tournament.types import Progress, TournamentInput, TournamentResult

HINT = "testhint"


class Host:
    """A host's sampling callback: answers judges with a verdict and the rest with text."""

    def __init__(self) -> None:
        self.seen: list[types.CreateMessageRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.seen.append(params)
        prompt = _text(params)
        if '"winner"' in prompt + (params.system_prompt or ""):
            text = json.dumps({"winner": "A", "confidence": 0.6, "reason": "A is clearer."})
        else:
            text = f"host answer {len(self.seen)}"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=text), model="host-model-1"
        )


def _text(params: types.CreateMessageRequestParams) -> str:
    blocks = [b for m in params.messages for b in m.content_as_list]
    return "".join(b.text for b in blocks if isinstance(b, types.TextContent))


def _session_queue(settings: Settings, queue: str) -> str:
    """The session queue a `ponder mcp` of this home polls (as its tools would route a run)."""
    secret = session_secret(settings.home, create=True)
    assert secret is not None
    return session_task_queue(queue, "mcp", secret)


def _env(settings: Settings, server_address: str, queue: str) -> dict[str, str]:
    return cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)


SMALL = {"n": 2, "k": 1, "t": 0, "m": 1}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tournament_runs_on_the_hosts_model(
    settings: Settings, server_address: str, worker_queue: str, mode: str
) -> None:
    """One think call with wait runs the whole tournament on the host: a handshake session is
    sent sampling/createMessage; the SDK's default mode speaks 2026-07-28, where the call
    carries them as input rounds."""
    host = Host()
    run_id = f"mcp-sample-{uuid.uuid4().hex[:8]}"
    env = _env(settings, server_address, worker_queue)
    async with stdio_client(env, sampling_callback=host, mode=mode) as session:
        if mode == "auto":
            assert session.protocol_version in MODERN_PROTOCOL_VERSIONS
        done = structured(
            await session.call_tool(
                "think",
                {"task": "Name a sorting algorithm", "model": f"mcp:{HINT}", "run_id": run_id}
                | SMALL
                | {"wait": True, "timeout_s": 120},
            )
        )
    assert done["status"] == "completed", done
    assert done["final_answer"].startswith("host answer")
    # Every call of the run went to the host, hint and prompt included.
    assert len(host.seen) == done["calls"] > 0
    assert all(p.model_preferences and p.model_preferences.hints for p in host.seen)
    hints = [p.model_preferences.hints for p in host.seen if p.model_preferences]
    assert {h[0].name for h in hints if h} == {HINT}
    assert any("Name a sorting algorithm" in _text(p) for p in host.seen)
    raw = (settings.runs_dir / run_id / "raw-events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in raw]
    assert {e["provider_kind"] for e in events} == {"mcp"}
    assert events[0]["response"]["body"]["model"] == "host-model-1"


@pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_run_waits_for_a_session_then_goes_on(
    client: Client, settings: Settings, server_address: str, worker_queue: str, mode: str
) -> None:
    run_id = f"mcp-wait-{uuid.uuid4().hex[:8]}"
    # No session is connected: the input itself names the session queue (as a session's
    # tools would), so the run starts, and its calls wait for one.
    payload = TournamentInput(
        task="Name a sorting algorithm",
        model=f"mcp:{HINT}",
        custom=Profile.model_validate(BUILTIN_PROFILES["quick"].model_dump() | SMALL),
        calls=CallOptions(session_queues={"mcp": _session_queue(settings, worker_queue)}),
    )
    handle = await client.start_workflow(
        TOURNAMENT, payload, id=run_id, task_queue=worker_queue, result_type=TournamentResult
    )
    waiting = await _until_waiting(handle)
    assert waiting.status == "waiting_provider"
    assert waiting.waiting_code == PROVIDER_SESSION_GONE
    if mode == "legacy":  # (once is enough: the CLI's status of a waiting run)
        env = _env(settings, server_address, worker_queue) | {"COLUMNS": "200"}
        shown = await ponder("status", run_id, env=env)
        assert PROVIDER_SESSION_GONE in shown.out and "connect one" in shown.out, shown.out

    host = Host()
    async with stdio_client(
        _env(settings, server_address, worker_queue), sampling_callback=host, mode=mode
    ) as session:
        if mode == "auto":
            # A 2026-07-28 session is sent nothing of its own: a tool call that waits
            # carries the run's calls.
            followed = structured(
                await session.call_tool("result", {"run_id": run_id, "wait": True})
            )
            assert followed["status"] == "completed", followed
        result = await asyncio.wait_for(handle.result(), 120)
    assert result.status == "completed"
    assert len(host.seen) == result.spent.calls > 0


async def test_a_call_that_waits_out_its_schedule_to_close_fails_session_gone(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    # Nothing ever polls the session queue: each try is never started (not a session_gone
    # answer), and the call's 8 s run out at its second wait.
    payload = AskInput(
        question="q",
        model=f"mcp:{HINT}",
        calls=CallOptions(
            schedule_to_close_s=8.0,
            session_queues={"mcp": _session_queue(settings, worker_queue)},
        ),
    )
    handle = await client.start_workflow(
        ASK, payload, id=f"mcp-gone-{uuid.uuid4().hex[:8]}", task_queue=worker_queue
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), 90)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == PROVIDER_SESSION_GONE, cause
    assert "within its schedule-to-close (8 s" in cause.message, cause.message


async def _until_waiting(handle: Any, timeout: float = 90) -> Progress:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        progress: Progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
        if progress.waiting_code is not None:
            return progress
        await asyncio.sleep(0.2)
    raise AssertionError(f"the run never waited for a session within {timeout}s")


async def test_the_cli_refuses_an_mcp_model_with_no_session(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = _env(settings, server_address, worker_queue)
    done = await ponder("think", "Sort a list", "--model", f"mcp:{HINT}", env=env, timeout=60)
    assert done.code == 2, done
    assert "mcp.no_session" in done.err and "ponder mcp" in done.err, done.err


@pytest.mark.parametrize("hint", ["", "has space", "a/b", "x" * 65, "-lead"])
def test_a_bad_hint_is_refused(settings: Settings, hint: str) -> None:
    with pytest.raises(ConfigError) as refused:
        resolve_model(f"mcp:{hint}", settings)
    assert refused.value.code in ("model.mcp_hint_invalid", "model.invalid")


def test_the_hint_goes_to_model_preferences() -> None:
    wire = SampleRequest("p", None, "sonnet", 10, None).wire()
    assert wire["modelPreferences"] == {"hints": [{"name": "sonnet"}]}
    assert "modelPreferences" not in SampleRequest("p", None, None, 10, None).wire()


SECRET = "0123456789abcdef" * 2


@pytest.mark.parametrize(
    "queue",
    [
        "anywhere",
        "q.session.mcp",  # the old, guessable form
        f"q.session.{SECRET[:-1]}.mcp",  # 31 hex digits
        f"q.session.{SECRET.upper()}.mcp",
        f".session.{SECRET}.mcp",
        f"q.session.{SECRET}.other",
        f"q.provider.{SECRET}.mcp",
    ],
)
def test_a_session_queue_without_a_secret_is_refused_no_session(queue: str) -> None:
    with pytest.raises(InputInvalid) as refused:
        decode_input(CallOptions, {"session_queues": {"mcp": queue}})
    assert refused.value.code == "mcp.no_session", refused.value
    assert "is not the session queue of a `ponder mcp`" in refused.value.message


def test_a_session_queue_with_a_secret_is_taken() -> None:
    queue = session_task_queue("q", "mcp", SECRET)
    assert queue == f"q.session.{SECRET}.mcp"
    assert CallOptions(session_queues={"mcp": queue}).awaits_session("mcp:x")


def test_a_homes_secret_is_made_once_and_kept_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert session_secret(home) is None  # a start reads it; only `ponder mcp` makes it
    made = session_secret(home, create=True)
    assert made is not None and SESSION_SECRET.fullmatch(made)
    assert session_secret(home, create=True) == session_secret(home) == made
    assert stat.S_IMODE((home / SESSION_SECRET_FILE).stat().st_mode) == 0o600
    assert [p.name for p in home.iterdir()] == [SESSION_SECRET_FILE]  # no draft left
    (home / SESSION_SECRET_FILE).write_text("not hex\n")
    assert session_secret(home) is None and session_secret(home, create=True) is None


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sampling_over_http(
    settings: Settings, server_address: str, worker_queue: str, mode: str
) -> None:
    """Streamable HTTP serves both: a handshake session's requests ride its stream, and a
    2026-07-28 request (one POST each, no back-channel) carries them as input rounds."""
    host = Host()
    run_id = f"mcp-http-sample-{uuid.uuid4().hex[:8]}"
    async with (
        serving(_env(settings, server_address, worker_queue)) as port,
        MCPClient(f"http://127.0.0.1:{port}/mcp", sampling_callback=host, mode=mode) as session,
    ):
        if mode == "auto":
            assert session.protocol_version in MODERN_PROTOCOL_VERSIONS
        done = structured(
            await session.call_tool(
                "think",
                {"task": "Name a sorting algorithm", "model": f"mcp:{HINT}", "run_id": run_id}
                | SMALL
                | {"wait": True, "timeout_s": 60},
            )
        )
    assert done["status"] == "completed", done
    assert len(host.seen) == done["calls"] > 0
