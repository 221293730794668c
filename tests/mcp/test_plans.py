"""A plan through MCP: run it, it pauses for input, resume it, decide its gate, follow it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from temporalio.client import Client

from activities.config import Settings
from client.export import bundle, render
from tests.cli import cli_env, ponder
from tests.mcp.helpers import stdio_client, structured, tool_failure

RELEASE = Path(__file__).resolve().parents[2] / "examples/plans/release.yaml"


async def test_plan_pauses_resumes_and_is_followed_with_watch(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"mcp-plan-{uuid.uuid4().hex[:8]}"
    async with stdio_client(env) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"plan_run", "resume", "resolve_gate", "plan_validate"} <= names
        paused = structured(
            await client.call_tool(
                "plan_run",
                {
                    "document": RELEASE.read_text(),
                    "filename": "release.yaml",
                    "args": {"version": "1.2"},
                    "run_id": run_id,
                    "wait": True,
                },
            )
        )
        assert paused["status"] == "awaiting_input", paused
        assert paused["report"] == str(settings.runs_dir / run_id / "report.html")
        assert paused["pending_pause"]["resume_arg"] == "approved_by"
        assert "call resume" in paused["next"]
        shown = structured(await client.call_tool("status", {"run_id": run_id}))
        assert shown["kind"] == "plan" and shown["status"] == "awaiting_input"

        at_gate = structured(
            await client.call_tool(
                "resume", {"run_id": run_id, "args": {"approved_by": "ada"}, "wait": True}
            )
        )
        assert at_gate["status"] == "awaiting_gate", at_gate
        assert at_gate["pending_gates"][0]["step"] == "ship"
        again = tool_failure(
            await client.call_tool("resume", {"run_id": run_id, "args": {"approved_by": "bob"}})
        )
        assert "stale-input-refused" in again["code"] + again["message"], again
        wrong = tool_failure(
            await client.call_tool(
                "resolve_gate", {"run_id": run_id, "step": "nope", "decision": "approve"}
            )
        )
        assert wrong["code"] == "unknown-step" and "ship" in wrong["message"]
        accepted = structured(
            await client.call_tool(
                "resolve_gate", {"run_id": run_id, "step": "ship", "decision": "approve"}
            )
        )
        assert accepted["status"] == "accepted"
        # The worker (roots: the test's tmp dir) refuses a workspace outside its roots.
        refused = structured(
            await client.call_tool(
                "plan_run",
                {"document": RELEASE.read_text(), "filename": "release.yaml", "workspace": "/",
                 "args": {"version": "1", "approved_by": "ada"}, "wait": True},
            )
        )  # fmt: skip
        assert refused["status"] == "failed", refused
        assert "workspace '/' is outside every" in refused["error"], refused
        assert "artifact-path-escapes-root" in refused["error"], refused
        assert refused["code"] == "artifact-path-escapes-root", refused  # the reason, as a code

    # Followed from the CLI, after the MCP server is gone.
    watched = await ponder("watch", run_id, env=env)
    assert watched.code == 0, watched.err
    assert watched.out.startswith("Simulated answer to: Announce the release.")
    async with stdio_client(env) as client:
        done = structured(await client.call_tool("result", {"run_id": run_id}))
        rows = structured(await client.call_tool("list_runs", {"kind": "plan"}))["runs"]
        row = next(r for r in rows if r["run_id"] == run_id)
        assert (row["status"], row["calls"], row["in_store"]) == ("completed", 2, True)
        trace = await client.read_resource(f"ponder://runs/{run_id}/trace")
        events = json.loads(trace.contents[0].text)["items"]  # type: ignore[union-attr]
        assert events[0]["type"] == "run.opened" and events[-1]["type"] == "run.closed"
        summary = await client.read_resource(f"ponder://runs/{run_id}/summary")
        assert json.loads(summary.contents[0].text)["outcome"] == "completed"  # type: ignore[union-attr]
    exported = json.loads(render(bundle(settings, run_id), "json"))
    assert exported["run"]["kind"] == "plan" and exported["trace"][-1]["type"] == "run.closed"
    assert done["status"] == "completed", done
    assert done["report"] == str(settings.runs_dir / run_id / "report.html")
    assert done.get("calls") == 2 and done["simulated"] is True, done
    assert set(done["outputs"]) >= {"notes", "announce"}


async def test_a_plan_paused_on_tokens_continues_with_the_extend_tool(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    document = json.dumps(
        {
            "schema": "ponder-plan/1",
            "name": "two",
            "steps": [
                {"id": "a", "kind": "agent", "prompt": "One.", "model": "sim:default"},
                {"id": "b", "kind": "agent", "prompt": "Two.", "model": "sim:default"},
            ],
        }
    )
    async with stdio_client(env) as client:
        paused = structured(
            await client.call_tool(
                "plan_run", {"document": document, "budget": {"tokens": 10}, "wait": True}
            )
        )
        assert paused["status"] == "awaiting_budget", paused
        assert "a higher tokens (input + output)" in paused["next"], paused
        run_id = paused["run_id"]
        split = tool_failure(
            await client.call_tool("extend", {"run_id": run_id, "max_input_tokens": 10**6})
        )
        assert split["code"] == "input.invalid" and "one token limit" in split["message"]
        done = structured(
            await client.call_tool("extend", {"run_id": run_id, "tokens": 10**6, "wait": True})
        )
        assert done["status"] == "completed", done


async def test_status_lists_the_nested_ledgers(
    settings: Settings, server_address: str, worker_queue: str, client: Client
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    # The run's ledger (4 calls) pauses at the sub-flow's first child: status shows every ledger.
    text = RELEASE.with_name("nested-budgets.yaml").read_text()
    assert "budget: {calls: 12}" in text
    run_id = f"mcp-ledgers-{uuid.uuid4().hex[:8]}"
    async with stdio_client(env) as mcp:
        paused = structured(
            await mcp.call_tool(
                "plan_run",
                {"document": text.replace("budget: {calls: 12}", "budget: {calls: 4}"),
                 "filename": "nested-budgets.yaml", "run_id": run_id, "wait": True},
            )
        )  # fmt: skip
        assert paused["status"] == "awaiting_budget", paused
        shown = structured(await mcp.call_tool("status", {"run_id": run_id}))
    await client.get_workflow_handle(run_id).terminate("test done")
    assert shown["step"] == "polish/tighten"
    ledgers = {ledger["owner"]: ledger for ledger in shown["ledgers"]}
    assert ledgers["polish"]["scope"] == "subflow" and ledgers["polish"]["calls_spent"] == 0
    assert ledgers["angles"]["calls_limit"] == ledgers["angles"]["calls_spent"] == 3
    assert ledgers["brief"]["wall_limit_ms"] == 60_000
