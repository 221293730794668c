"""``ponder mcp --http``: a round trip with the SDK's client, and the refusals of the guard."""

from __future__ import annotations

import json
import uuid

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from activities.config import Settings
from client.mcp.http import Listen, parse_listen
from tests.cli import cli_env, finish, ponder_here
from tests.mcp.helpers import (
    raw_request,
    serving,
    start_http,
    structured,
    tool_failure,
)

TOKEN = "t0ken-for-tests-0123456789abcdef"


def _head(port: int, *, host: str | None = None, **headers: str) -> str:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {host or f'127.0.0.1:{port}'}",
        # A body is announced and never sent: a refusal must not wait for it.
        "Content-Length: 100000",
    ]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return "\r\n".join(lines) + "\r\n\r\n"


async def test_round_trip_and_refusals_over_http(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"mcp-http-{uuid.uuid4().hex[:8]}"
    async with serving(env) as port:
        # The handshake era most clients speak today.
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"think", "result", "status", "list_runs"} <= names
            seen: list[float] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                seen.append(done)

            done = structured(
                await client.call_tool(
                    "think",
                    {
                        "task": "Sort",
                        "model": "sim:default,latency=fixed:150",
                        "run_id": run_id,
                        "wait": True,
                    },
                    progress_callback=on_progress,
                )
            )
            assert done["status"] == "completed" and "[sim q=" in done["final_answer"]
            assert seen, "progress notifications arrive over the HTTP stream too"
            again = structured(await client.call_tool("result", {"run_id": run_id}))
            assert again["winner_id"] == done["winner_id"]
            summary = await client.read_resource(f"ponder://runs/{run_id}/summary")
            assert json.loads(summary.contents[0].text)["run_id"] == run_id  # type: ignore[union-attr]
            refused = tool_failure(await client.call_tool("result", {"run_id": "a/../../b"}))
            assert refused["code"] == "run.id_invalid"
            with pytest.raises(MCPError, match=r"run\.id_invalid"):
                await client.read_resource("ponder://runs/..%2Fsecrets/summary")

        json_type = {"Content_Type": "application/json"}
        foreign = await raw_request(port, _head(port, Origin="http://evil.example", **json_type))
        assert " 403 " in foreign
        rebinding = await raw_request(port, _head(port, host=f"evil.example:{port}", **json_type))
        assert " 421 " in rebinding
        text = await raw_request(port, _head(port, Content_Type="text/plain"))
        assert " 415 " in text
        # The guard is the only difference: the same head from this origin reaches the app.
        async with httpx2.AsyncClient() as http:
            own = await http.post(
                f"http://127.0.0.1:{port}/mcp",
                headers={"Origin": f"http://127.0.0.1:{port}", "Accept": "application/json"},
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            )
        assert own.status_code not in (401, 403, 415, 421), own.text


def test_a_remote_bind_is_refused_without_allow_remote_and_a_token(settings: Settings) -> None:
    # Refused on the arguments before anything starts: in this process, not a ponder process
    # each (most of a second of CPU apiece).
    env = cli_env(settings.home, TEMPORAL_ADDRESS="127.0.0.1:9", PONDER_TASK_QUEUE="unused")
    no_flag = ponder_here("mcp", "--http", "0.0.0.0:8765", env=env)
    assert no_flag.code == 2 and "--allow-remote" in no_flag.err
    no_token = ponder_here("mcp", "--http", "0.0.0.0:8765", "--allow-remote", env=env)
    assert no_token.code == 2 and "PONDER_MCP_TOKEN" in no_token.err


async def test_a_remote_bind_needs_allow_remote_and_a_token(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    env["PONDER_MCP_TOKEN"] = TOKEN
    async with serving(
        env, "0.0.0.0:{port}", "--allow-remote", "--allow-host", "127.0.0.1"
    ) as port:
        missing = await raw_request(port, _head(port, Content_Type="application/json"))
        assert " 401 " in missing
        wrong = await raw_request(
            port, _head(port, Content_Type="application/json", Authorization="Bearer nope")
        )
        assert " 401 " in wrong
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            async with Client(transport) as client:
                listed = structured(await client.call_tool("profile_list", {}))
                assert "quick" in listed["built_in"]


def test_listen_addresses() -> None:
    assert parse_listen("8765") == Listen("127.0.0.1", 8765)
    assert parse_listen(":8765") == Listen("127.0.0.1", 8765)
    assert parse_listen("[::1]:9") == Listen("::1", 9)
    assert parse_listen("[::1]:9").url == "http://[::1]:9/mcp"
    with pytest.raises(Exception, match="port 1-65535"):
        parse_listen("localhost:http")


async def test_sigterm_is_one_line_with_a_code(settings: Settings, server_address: str) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE="no-worker")
    process, _ = await start_http(env)
    process.terminate()
    done = await finish(process, timeout=60)
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert lines[0].startswith("ponder MCP server at "), done.err
    # No uvicorn CancelledError traceback: the one line every ponder command ends with.
    assert lines[1:] == [
        "ponder: process.terminated: terminated (SIGTERM); open runs go on in a background worker"
    ], done.err
    assert done.code == 128 + 15
