"""The tools beside ponder's CLI commands (profile_save, profile_delete, plan, export) and the
prompts for the common jobs, over the SDK's own stdio client against ``ponder mcp``."""

from __future__ import annotations

import json
import uuid

import mcp_types as types
import pytest
from mcp import MCPError

from activities.config import Settings
from activities.pricing import PRICES_AS_OF
from client.mcp.tools import MAX_EXPORT_CHARS
from client.profiles import ProfileStore
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, structured, tool_failure

NEW_TOOLS = {"profile_save", "profile_delete", "plan", "export"}


def _env(settings: Settings, server_address: str, queue: str) -> dict[str, str]:
    return cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)


async def test_plan_and_profiles(settings: Settings, server_address: str) -> None:
    # Nothing polls this queue: plan and the profile tools start no run.
    async with stdio_client(_env(settings, server_address, "no-worker")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= NEW_TOOLS
        assert tools["plan"].input_schema["required"] == ["task"]
        assert "wait" not in tools["plan"].input_schema["properties"]

        # The numbers ponder think --dry-run prints for the same settings (test_think_cli).
        adaptive = structured(
            await client.call_tool(
                "plan", {"task": "x", "profile": "balanced", "schedule": "adaptive"}
            )
        )
        phases = {p["phase"]: p for p in adaptive["phases"]}
        # The adaptive default budget: 30% of the k-regular pairs, at least n = 8.
        assert phases["generation_judging:1"]["calls"] == 8
        assert phases["generation_judging:1"]["adaptive_rounds"] == [4, 4]
        assert phases["final_judging"]["adaptive_rounds"] == [4, 4]
        assert adaptive["sequential_rounds"] == 9 and adaptive["profile"] == "balanced"
        priced = structured(
            await client.call_tool(
                "plan",
                {"task": "x", "model": "openai:gpt-4o-mini", "budget": {"max_usd": 5}},
            )
        )
        assert priced["estimated_usd"] is not None and priced["unpriced"] == []
        assert priced["worst_case_usd"] >= priced["estimated_usd"]
        assert priced["prices_as_of"] == PRICES_AS_OF
        too_big = tool_failure(await client.call_tool("plan", {"task": "x", "n": 10**9}))
        assert too_big["code"] == "input.invalid" and "n" in too_big["message"]

        tiny = {"n": 4, "k": 2, "t": 0, "m": 2, "provider": "sim", "description": "small"}
        saved = structured(
            await client.call_tool("profile_save", {"name": "tiny", "settings": tiny})
        )
        assert saved["saved"] and saved["profile"]["n"] == 4
        assert ProfileStore(settings.home).load("tiny").n == 4  # the file ponder think reads
        listed = structured(await client.call_tool("profile_list", {}))
        assert "tiny" in listed["saved"]
        again = tool_failure(
            await client.call_tool("profile_save", {"name": "tiny", "settings": tiny})
        )
        assert again["code"] == "profile.exists" and "force" in again["fix"]
        replaced = structured(
            await client.call_tool(
                "profile_save", {"name": "tiny", "settings": tiny | {"n": 6}, "force": True}
            )
        )
        assert replaced["profile"]["n"] == 6
        # A saved profile drives plan as it drives think.
        planned = structured(await client.call_tool("plan", {"task": "x", "profile": "tiny"}))
        assert planned["profile"] == "tiny" and planned["models"] == ["sim:default"]

        secret = tool_failure(
            await client.call_tool(
                "profile_save", {"name": "leak", "settings": {"api_key": "sk-hunter2"}}
            )
        )
        assert secret["code"] == "profile.secret" and "sk-hunter2" not in json.dumps(secret)
        for name in ("../escape", "quick"):
            bad = tool_failure(await client.call_tool("profile_save", {"name": name}))
            assert bad["code"] == "profile.invalid", (name, bad)
        wrong = tool_failure(
            await client.call_tool("profile_save", {"name": "w", "settings": {"n": "many"}})
        )
        assert wrong["code"] == "profile.invalid" and "n" in wrong["message"]

        gone = structured(await client.call_tool("profile_delete", {"name": "tiny"}))
        assert gone["deleted"] and not ProfileStore(settings.home).exists("tiny")
        missing = tool_failure(await client.call_tool("profile_delete", {"name": "tiny"}))
        assert missing["code"] == "profile.not_found"


async def test_export(settings: Settings, server_address: str, worker_queue: str) -> None:
    run_id = f"mcp-export-{uuid.uuid4().hex[:8]}"
    async with stdio_client(_env(settings, server_address, worker_queue)) as client:
        asked = structured(
            await client.call_tool(
                "ask", {"question": "Name a prime", "model": "sim:default", "run_id": run_id,
                        "wait": True},
            )
        )  # fmt: skip
        assert asked["status"] == "completed", asked
        whole = structured(await client.call_tool("export", {"run_id": run_id}))
        assert whole["format"] == "json"
        assert whole["bundle"]["format"] == "ponder-run-bundle/1"
        assert whole["bundle"]["run"]["run_id"] == run_id and whole["bundle"]["texts"]["answer"]
        page = structured(
            await client.call_tool("export", {"run_id": run_id, "format": "markdown"})
        )
        assert page["text"].startswith(f"# ponder run {run_id}") and "## Answer" in page["text"]
        lines = structured(await client.call_tool("export", {"run_id": run_id, "format": "jsonl"}))
        assert json.loads(lines["text"].splitlines()[0])["type"] == "run"
        unknown = tool_failure(await client.call_tool("export", {"run_id": "no-such-run"}))
        assert unknown["code"] == "run.not_found"
        escape = tool_failure(await client.call_tool("export", {"run_id": "../etc"}))
        assert escape["code"] == "run.id_invalid"
        fmt = tool_failure(await client.call_tool("export", {"run_id": run_id, "format": "pdf"}))
        assert fmt["code"] == "input.invalid" and "format" in fmt["message"]

        # A bundle over a tool result's ceiling is refused with where to get it instead.
        big = settings.runs_dir / "mcp-export-big"
        (big / "artifacts").mkdir(parents=True)
        (big / "summary.json").write_text(json.dumps({"kind": "ask", "status": "completed"}))
        (big / "artifacts/answer.txt").write_text("x" * (MAX_EXPORT_CHARS + 1))
        large = tool_failure(await client.call_tool("export", {"run_id": "mcp-export-big"}))
        assert large["code"] == "export.too_large" and "ponder export" in large["fix"]


def _text(result: types.GetPromptResult) -> str:
    (message,) = result.messages
    assert message.role == "user" and isinstance(message.content, types.TextContent)
    return message.content.text


async def test_prompts(settings: Settings, server_address: str) -> None:
    async with stdio_client(_env(settings, server_address, "no-worker")) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(listed) == {"think_on_task", "rank_candidates", "run_plan", "compare_variants"}
        for prompt in listed.values():
            assert prompt.description and prompt.arguments
            assert any(a.required for a in prompt.arguments), prompt.name
        required = {a.name for a in listed["rank_candidates"].arguments or [] if a.required}
        assert required == {"task", "candidates"}

        think = _text(await client.get_prompt("think_on_task", {"task": "Sort a list"}))
        assert "`plan`" in think and "`think`" in think
        assert '"task": "Sort a list"' in think and '"wait": true' in think
        ranked = _text(
            await client.get_prompt(
                "rank_candidates", {"task": "t", "candidates": "first\n---\nsecond"}
            )
        )
        assert "`rank`" in ranked and '"id": "c2"' in ranked and '"text": "second"' in ranked
        as_list = _text(
            await client.get_prompt("rank_candidates", {"task": "t", "candidates": '["a", "b"]'})
        )
        assert '"text": "b"' in as_list
        plan = _text(
            await client.get_prompt("run_plan", {"document": "steps: []", "args": '{"k": 1}'})
        )
        assert "`plan_validate`" in plan and "`plan_run`" in plan and '"k": 1' in plan
        campaign = _text(await client.get_prompt("compare_variants", {"document": "x: 1"}))
        assert "`campaign_run`" in campaign

        # A call of the wrong shape is usage.invalid, a value that breaks its rule input.invalid,
        # as a tool's arguments and the command line code them.
        refusals = [
            ("think_on_task", {}, "usage.invalid", "'task' is required"),
            ("think_on_task", {"task": "  "}, "input.invalid", "'task' is required"),
            ("think_on_task", {"task": "t", "colour": "red"}, "usage.invalid", "'colour' is not"),
            (
                "rank_candidates",
                {"task": "t", "candidates": "only one"},
                "input.invalid",
                "at least 2",
            ),
            ("run_plan", {"document": "d", "args": "[1]"}, "input.invalid", "not a JSON object"),
            ("no_such_prompt", {}, "usage.invalid", "no prompt 'no_such_prompt'"),
        ]
        for name, arguments, code, needle in refusals:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(name, arguments)
            assert refused.value.error.code == types.INVALID_PARAMS
            message = refused.value.error.message
            assert message.startswith(f"{code}: ") and needle in message, message
            assert "fix: " in message
