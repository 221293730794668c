"""The MCP page's client configuration, as a client would use it, starts a working server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.cli import cli_env
from tests.mcp.helpers import structured
from tests.test_readme import fenced, section

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


async def test_the_readme_configuration_serves_ponder(tmp_path: Path) -> None:
    (block,) = fenced(section("## Client configuration", page="docs/mcp.md"), "json")
    entry = json.loads(block)["mcpServers"]["ponder"]
    assert entry["command"] == "ponder" and entry["args"] == ["mcp"]
    # The installed script, as a client finds it on PATH; this test's home for PONDER_HOME.
    command = str(Path(sys.executable).parent / entry["command"])
    env = cli_env(tmp_path) | {k: v for k, v in entry["env"].items() if k != "PONDER_HOME"}
    params = StdioServerParameters(command=command, args=entry["args"], env=env)
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        assert "think" in {t.name for t in (await client.list_tools()).tools}
        answer = structured(
            await client.call_tool("ask", {"question": "Hi", "model": "sim:default", "wait": True})
        )
    assert answer["status"] == "completed" and answer["simulated"] is True
