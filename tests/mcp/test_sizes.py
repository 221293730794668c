"""MCP tools hold numbers and sim options to the workflow input's ceilings: the
oversized ``ask`` inputs are refused with a code before a run starts, over the SDK's own
stdio client against ``ponder mcp``."""

from __future__ import annotations

from typing import Any

from activities.config import Settings
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, tool_failure

# (tool, arguments, code, what the message names); nothing polls the queue: none may start.
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("ask", {"question": "q", "seed": 1e38}, "input.invalid", "seed"),
    ("ask", {"question": "q", "seed": 10**38}, "input.invalid", "seed"),
    ("ask", {"question": "q", "max_output_tokens": 10**30}, "input.invalid", "max_output_tokens"),
    # The model is resolved (as the CLI does) before the arguments become workflow input.
    ("ask", {"question": "q", "model": "sim:x,chars=100000000000"},
     "model.options_invalid", "chars"),
    ("think", {"task": "t", "provider": "sim", "seed": 2**70}, "input.invalid", "seed"),
    ("rank", {"task": "t", "candidates": [{"id": "a", "text": "a"}] * 2, "seed": 2**70},
     "input.invalid", "seed"),
]  # fmt: skip


async def test_mcp_refuses_numbers_and_sim_options_past_their_ceilings(
    settings: Settings, server_address: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE="no-worker")
    async with stdio_client(env) as client:
        for tool, arguments, code, needle in CASES:
            refused = tool_failure(await client.call_tool(tool, arguments))
            assert refused["code"] == code, (tool, arguments, refused)
            assert needle in refused["message"], (tool, arguments, refused)
