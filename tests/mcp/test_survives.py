"""Runs belong to Temporal, not to the MCP server: killed mid-run, the run still completes."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from mcp import Client

from tests.cli import cli_env, finish, ponder
from tests.mcp.helpers import start_http, stdio_client, structured

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]


async def test_a_killed_mcp_server_leaves_its_run_going(tmp_path: Path) -> None:
    # The embedded default, as a user has it: no TEMPORAL_ADDRESS, a home of its own.
    env = cli_env(tmp_path)
    server, port = await start_http(env)
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        started = structured(
            await client.call_tool(
                "think",
                # Every call takes 700 ms: the run lasts several seconds.
                {"task": "Sort", "model": "sim:default,latency=fixed:700", "run_id": "kept"},
            )
        )
        assert started["status"] == "running"
        # Until its first call has answered: on a fresh home that waits for the background
        # worker to start, which under load can take longer than 100 polls (about 20 s).
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while True:
            seen = structured(await client.call_tool("status", {"run_id": "kept"}))
            if seen.get("progress", {}).get("calls", 0) > 0 or seen["status"] != "running":
                break
            assert loop.time() < deadline, f"no call answered: {seen}"
            await asyncio.sleep(0.2)
        assert seen["status"] == "running", seen
        assert 0 < seen["progress"]["calls"] < 15
    os.kill(server.pid, signal.SIGKILL)
    await finish(server)

    # A new server (stdio this time) returns the result of the run the dead one started.
    async with stdio_client(env) as client:
        done = structured(await client.call_tool("result", {"run_id": "kept", "wait": True}))
    assert done["status"] == "completed" and done["calls"] == 15
    # And the CLI follows the same run.
    watched = await ponder("watch", "kept", env=env)
    assert watched.code == 0, watched.err
    assert f"winner: {done['winner_id']}" in watched.err
