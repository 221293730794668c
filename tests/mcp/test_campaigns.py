"""A campaign through MCP: run it to its decision; paused on its budget, extended."""

from __future__ import annotations

import json
import uuid

from activities.config import Settings
from client.bundles import bundle, render
from tests.campaigns.helpers import document
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, structured, tool_failure


async def test_campaign_runs_pauses_and_extends(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"mcp-camp-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total))

    async with stdio_client(env) as client:
        done = structured(
            await client.call_tool(
                "campaign_run",
                {
                    "document": json.dumps(document(seeds=[0])),
                    "filename": "c.json",
                    "run_id": run_id,
                    "wait": True,
                },
                progress_callback=on_progress,
            )
        )
        assert done["status"] == "completed", done
        assert done["cells"] == 6 and set(done["decisions"]) == {"deep"}
        assert done["recommendation"] and seen and seen[-1][1] == 6
        again = structured(await client.call_tool("result", {"run_id": run_id}))
        assert again["recommendation"] == done["recommendation"]
        shown = structured(await client.call_tool("status", {"run_id": run_id}))
        assert shown["kind"] == "campaign" and shown["status"] == "completed"
        rows = structured(await client.call_tool("list_runs", {"since": "10m"}))["runs"]
        (row,) = [r for r in rows if r["run_id"] == run_id]
        assert (row["kind"], row["calls"]) == ("campaign", done["spent"]["calls"])
        assert row["outcome"] == done["recommendation"]
        assert not any(r["run_id"].startswith(f"{run_id}.") for r in rows)  # its cells: hidden
        every = structured(await client.call_tool("list_runs", {"since": "10m", "cells": True}))
        cells = [r for r in every["runs"] if r["parent"] == run_id]
        assert len(cells) == 6 and {r["kind"] for r in cells} == {"ask", "tournament"}
        exported = json.loads(render(bundle(settings, run_id), "json"))
        assert exported["run"]["kind"] == "campaign" and len(exported["records"]) == 6
        markdown = render(bundle(settings, run_id), "markdown")
        assert "## Decision" in markdown and "| deep | " in markdown

        tight = document(seeds=[0], budget={"max_calls": 2})
        tight["variants"][1] = {"id": "other", "kind": "single", "config": {"model": "sim:default"}}
        paused = structured(
            await client.call_tool(
                "campaign_run",
                {"document": json.dumps(tight), "filename": "t.json", "wait": True},
            )
        )
        assert paused["status"] == "awaiting_budget" and "extend" in paused["next"]
        assert paused["cells"]["done"] == 2
        finished = structured(
            await client.call_tool(
                "extend", {"run_id": paused["run_id"], "max_calls": 6, "wait": True}
            )
        )
        assert finished["status"] == "completed" and finished["cells"] == 6

        with_path = document(seeds=[0])
        with_path["variants"][1] = {"id": "p", "kind": "plan", "config": {"plan": "/etc/x.yaml"}}
        refused = tool_failure(
            await client.call_tool("campaign_run", {"document": json.dumps(with_path)})
        )
        assert refused["code"] == "document.plan_path"
        invalid = tool_failure(
            await client.call_tool(
                "campaign_run", {"document": json.dumps(document(comparator="ghost"))}
            )
        )
        assert invalid["code"] == "comparator.unknown"
