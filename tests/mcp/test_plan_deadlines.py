"""Gate deadlines and training-pair failures through MCP: the status a waiting plan shows (its
deadline, default and escalation), a late decision refused ``stale-gate-token``."""

from __future__ import annotations

import asyncio
import json
import uuid

from activities.config import Settings
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, structured, tool_failure

PLAN = {
    "schema": "ponder-plan/1",
    "name": "mcp-deadline",
    "training_pairs": True,
    "steps": [
        {"id": "quiet", "kind": "agent", "model": "sim:default", "prompt": "Nothing.",
         "x-sim": {"outputs": [""]}},
        # 5 s: plan_run's wait must see ship pending (it polls every 0.25 s through queries)
        # before the default decides it; 1.5 s was little under load.
        {"id": "ship", "kind": "gate", "deps": ["quiet"],
         "gate": {"deadline": 5000, "default": "approve"}},
        {"id": "confirm", "kind": "gate", "deps": ["ship"],
         "gate": {"deadline": 600000, "default": "kill", "escalate": {"after_ms": 1000}}},
    ],
}  # fmt: skip


async def test_a_gate_deadline_through_mcp(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"mcp-deadline-{uuid.uuid4().hex[:8]}"
    async with stdio_client(env) as client:
        paused = structured(
            await client.call_tool(
                "plan_run",
                {"document": json.dumps(PLAN), "filename": "p.json", "run_id": run_id,
                 "wait": True},
            )
        )  # fmt: skip
        assert paused["status"] == "awaiting_gate", paused
        (gate,) = paused["pending_gates"]
        assert (gate["step"], gate["default"]) == ("ship", "approve") and gate["deadline_at"]
        assert "token" not in gate
        assert paused["capture_failures"] == [
            {"step": "quiet", "mode": "capture", "reason": "empty-output", "detail": None}
        ]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while True:  # the deadline approves ship; confirm waits and escalates
            shown = structured(await client.call_tool("status", {"run_id": run_id}))
            gates = shown.get("pending_gates", [])
            if gates and gates[0]["step"] == "confirm" and gates[0].get("escalated"):
                break
            assert loop.time() < deadline, shown
            await asyncio.sleep(0.2)
        assert gates[0]["default"] == "kill" and gates[0]["escalate_at"]
        late = tool_failure(
            await client.call_tool(
                "resolve_gate", {"run_id": run_id, "step": "ship", "decision": "kill"}
            )
        )
        assert late["code"] == "stale-gate-token", late
        done = structured(
            await client.call_tool(
                "resolve_gate",
                {"run_id": run_id, "step": "confirm", "decision": "approve", "wait": True},
            )
        )
        assert done["status"] == "completed", done
        assert done["outputs"]["ship"] == "approve"
        assert [f["reason"] for f in done["capture_failures"]] == ["empty-output"]
