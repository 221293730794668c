"""Control through MCP: a run paused on its budget, extended; a run cancelled."""

from __future__ import annotations

import uuid

from activities.config import Settings
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, structured, tool_failure


async def test_pause_extend_and_cancel(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"mcp-pause-{uuid.uuid4().hex[:8]}"
    async with stdio_client(env) as client:
        # Half the verdicts are invalid JSON and each is retried: 15 calls cannot finish it.
        paused = structured(
            await client.call_tool(
                "think",
                {
                    "task": "Sort",
                    "model": "sim:default,invalid_json_rate=0.5",
                    "invalid_json_retries": 3,
                    "seed": 4,
                    "budget": {"max_calls": 15},
                    "run_id": run_id,
                    "wait": True,
                },
            )
        )
        assert paused["status"] == "awaiting_budget", paused
        assert paused["progress"]["blocking_limit"] == "max_calls"
        assert "extend" in paused["next"]
        seen = structured(await client.call_tool("status", {"run_id": run_id}))
        assert seen["status"] == "awaiting_budget" and seen["progress"]["calls"] == 15
        below = tool_failure(await client.call_tool("extend", {"run_id": run_id, "max_calls": 2}))
        assert below["code"] == "budget.extend_refused" and "already spent" in below["message"]
        empty = tool_failure(await client.call_tool("extend", {"run_id": run_id}))
        assert empty["code"] == "option.missing"  # ponder extend's code for the same mistake
        done = structured(
            await client.call_tool("extend", {"run_id": run_id, "max_calls": 100, "wait": True})
        )
        assert done["status"] == "completed" and done["budget"]["max_calls"] == 100
        assert 15 < done["calls"] <= 100

        slow = structured(
            await client.call_tool(
                "think", {"task": "Sort", "model": "sim:default,latency=fixed:1000"}
            )
        )
        stopping = structured(await client.call_tool("cancel", {"run_id": slow["run_id"]}))
        assert stopping["status"] == "cancelling"
        ended = structured(
            await client.call_tool("result", {"run_id": slow["run_id"], "wait": True})
        )
        assert ended["status"] == "cancelled" and ended["error"] == "cancelled"
        assert ended["code"] == "run.cancelled"
