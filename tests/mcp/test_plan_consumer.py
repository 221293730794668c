"""Consumer steps and checkpoints over MCP: an MCP client executes a step (issuance, step_done),
commits and reverts a checkpoint, and starts a new run from it (plan_run from_checkpoint)."""

from __future__ import annotations

import uuid

from activities.config import Settings
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, structured, tool_failure
from tests.plans.test_run_consumer_cli import PLAN


async def test_an_mcp_client_is_the_consumer_and_reverts_and_resumes_from_a_checkpoint(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"mcp-consumer-{uuid.uuid4().hex[:8]}"
    async with stdio_client(env) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"issuance", "step_done", "checkpoint", "revert"} <= names
        paused = structured(
            await client.call_tool(
                "plan_run",
                {"document": PLAN, "filename": "p.yaml", "run_id": run_id, "wait": True},
            )
        )
        assert paused["status"] == "awaiting_consumer", paused
        [issued] = paused["issuances"]
        assert issued["step"] == "build" and "call issuance" in paused["next"]
        view = structured(await client.call_tool("issuance", {"run_id": run_id, "step": "build"}))
        assert view["prompts"][issued["token"]].startswith("Build the widget.")
        assert view["contract"] == {"name": "string"}
        unknown = tool_failure(await client.call_tool("issuance", {"run_id": run_id, "step": "x"}))
        assert unknown["code"] == "unknown-step"

        stale = tool_failure(
            await client.call_tool(
                "step_done",
                {"run_id": run_id, "step": "build", "token": "0-old", "output": "x"},
            )
        )
        assert stale["code"] == "stale-dispatch-token", stale
        bad = tool_failure(
            await client.call_tool(
                "step_done",
                {"run_id": run_id, "step": "build", "output": "x", "usage": {"calls": 2}},
            )
        )
        assert bad["code"] == "invalid-result", bad
        at_gate = structured(
            await client.call_tool(
                "step_done",
                {"run_id": run_id, "step": "build", "output": {"name": "widget"}, "wait": True},
            )
        )
        assert at_gate["status"] == "awaiting_gate", at_gate
        assert at_gate["checkpoints"] == ["built"]

        committed = structured(
            await client.call_tool("checkpoint", {"run_id": run_id, "label": "at-gate"})
        )
        assert committed["labels"] == ["built", "at-gate"]
        invalid = tool_failure(
            await client.call_tool("checkpoint", {"run_id": run_id, "label": "a b"})
        )
        assert invalid["code"] == "invalid-label"
        missing = tool_failure(await client.call_tool("revert", {"run_id": run_id, "label": "x"}))
        assert missing["code"] == "checkpoint-not-found" and "built" in missing["message"]
        again = structured(
            await client.call_tool("revert", {"run_id": run_id, "label": "built", "wait": True})
        )
        assert again["status"] == "awaiting_gate", again
        killed = structured(
            await client.call_tool(
                "resolve_gate",
                {"run_id": run_id, "step": "ship", "decision": "kill", "wait": True},
            )
        )
        assert killed["status"] == "failed" and "gate-killed" in killed["error"]

        second = structured(
            await client.call_tool(
                "plan_run",
                {
                    "document": PLAN,
                    "filename": "p.yaml",
                    "from_checkpoint": f"{run_id}:built",
                    "wait": True,
                },
            )
        )
        assert second["status"] == "awaiting_gate" and second["resumed"] == ["build"], second
        malformed = tool_failure(
            await client.call_tool(
                "plan_run", {"document": PLAN, "filename": "p.yaml", "from_checkpoint": run_id}
            )
        )
        assert malformed["code"] == "input.invalid"
        refused_id = f"{run_id}-nope"
        unknown_label = tool_failure(
            await client.call_tool(
                "plan_run",
                {"document": PLAN, "filename": "p.yaml", "run_id": refused_id,
                 "from_checkpoint": f"{run_id}:nope"},
            )
        )  # fmt: skip
        assert unknown_label["code"] == "checkpoint-not-found", unknown_label
        assert "built, at-gate" in unknown_label["message"]
        assert not (settings.runs_dir / refused_id).exists()  # no run opened
