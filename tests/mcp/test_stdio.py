"""``ponder mcp`` over stdio, driven by the SDK's own client, on the session's dev server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from mcp import MCPError

from activities.config import Settings
from client.mcp import resources
from client.profiles import ProfileStore, SavedProfile
from tests.cli import cli_env
from tests.mcp.helpers import stdio_client, structured, tool_failure
from workflows.errors import PonderError

TOOLS = {
    "think",
    "rank",
    "mutate",
    "ask",
    "status",
    "result",
    "extend",
    "cancel",
    "list_runs",
    "profile_list",
    "profile_show",
    "plan_validate",
}
PLAN = Path(__file__).parents[1] / "plans/loop-plan-1.example.json"


def _env(settings: Settings, server_address: str, queue: str) -> dict[str, str]:
    # A plain client of the session's server; this test's worker (same home) runs the runs.
    return cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)


async def test_round_trip_over_stdio(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    run_id = f"mcp-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    ProfileStore(settings.home).save("tiny", SavedProfile(n=4, k=2, t=0, m=2, provider="sim"))
    async with stdio_client(_env(settings, server_address, worker_queue)) as client:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) >= TOOLS
        think_schema = tools["think"].input_schema
        assert think_schema["type"] == "object" and think_schema["required"] == ["task"]
        assert set(think_schema["properties"]) >= {"task", "profile", "provider", "wait", "budget"}
        # The same pydantic models as the workflow input: the budget's own schema.
        assert "BudgetLimits" in json.dumps(think_schema)

        done = structured(
            await client.call_tool(
                "think",
                {
                    "task": "Sort a list",
                    "model": "sim:default,latency=fixed:150",
                    "seed": 3,
                    "run_id": run_id,
                }
                | {"wait": True},
                progress_callback=on_progress,
            )
        )
        assert done["status"] == "completed" and done["run_id"] == run_id
        assert "[sim q=" in done["final_answer"]
        assert done["calls"] == 15 and done["leaderboard"][0]["candidate_id"] == done["winner_id"]
        assert seen and all(total == 15 for _, total, _ in seen)
        assert any("calls" in (message or "") for _, _, message in seen)

        again = structured(await client.call_tool("result", {"run_id": run_id}))
        assert again["winner_id"] == done["winner_id"]
        summary = await client.read_resource(f"ponder://runs/{run_id}/summary")
        text = summary.contents[0]
        assert json.loads(text.text)["winner_id"] == done["winner_id"]  # type: ignore[union-attr]
        board = await client.read_resource(f"ponder://runs/{run_id}/leaderboard")
        items = json.loads(board.contents[0].text)["items"]  # type: ignore[union-attr]
        assert items[0]["candidate_id"] == done["winner_id"] and len(items) == 4
        comparisons = await client.read_resource(f"ponder://runs/{run_id}/comparisons")
        page = json.loads(comparisons.contents[0].text)  # type: ignore[union-attr]
        assert page["total"] == 8 and page["next"] is None
        report = await client.read_resource(f"ponder://runs/{run_id}/report")
        assert "<html" in report.contents[0].text.lower()  # type: ignore[union-attr]
        listed_resources = await client.list_resources()
        assert f"ponder://runs/{run_id}/summary" in {r.uri for r in listed_resources.resources}
        templates = await client.list_resource_templates()
        uris = {t.uri_template for t in templates.resource_templates}
        assert "ponder://runs/{run_id}/trace" in uris

        # A saved profile by name; the call returns at once with the run id.
        started = structured(
            await client.call_tool("think", {"task": "Name a colour", "profile": "tiny", "seed": 1})
        )
        assert started["status"] == "running" and started["profile"] == "tiny"
        follow = structured(
            await client.call_tool("result", {"run_id": started["run_id"], "wait": True})
        )
        assert follow["status"] == "completed" and follow["calls"] == 4 + 4

        answer = structured(
            await client.call_tool("ask", {"question": "Hi?", "model": "sim:default", "wait": True})
        )
        assert answer["status"] == "completed" and answer["simulated"] is True
        # Cancelling a run that has ended says so (Temporal accepts it and does nothing).
        ended = structured(await client.call_tool("cancel", {"run_id": answer["run_id"]}))
        assert ended["status"] == "completed" and "already ended" in ended["next"]
        ranked = structured(
            await client.call_tool(
                "rank",
                {
                    "task": "Best greeting",
                    "candidates": [
                        {"id": "a", "text": "hello"},
                        {"id": "b", "text": "hi there"},
                        {"id": "c", "text": "good day"},
                    ],
                    "model": "sim:default",
                    "wait": True,
                },
            )
        )
        assert sorted(r["candidate_id"] for r in ranked["leaderboard"]) == ["a", "b", "c"]
        assert ranked["calls"] == 3  # all pairs of three
        mutated = structured(
            await client.call_tool(
                "mutate",
                {
                    "task": "Greet",
                    "candidate": "hello",
                    "critique": "warmer",
                    "model": "sim:default",
                    "wait": True,
                },
            )
        )
        assert mutated["kind"] == "ask" and mutated["answer"]
        listed_runs = structured(await client.call_tool("list_runs", {"since": "10m"}))
        ids = {r["run_id"] for r in listed_runs["runs"]}
        assert {run_id, started["run_id"], answer["run_id"], ranked["run_id"]} <= ids
        shown = structured(await client.call_tool("profile_show", {"name": "tiny"}))
        assert shown["profile"]["n"] == 4
        assert "tiny" in structured(await client.call_tool("profile_list", {}))["saved"]

        plan_text = PLAN.read_text()
        valid = structured(
            await client.call_tool("plan_validate", {"document": plan_text, "filename": "p.json"})
        )
        assert valid["valid"] and valid["name"] == "change-with-qe" and valid["steps"] == 6
        broken = json.loads(plan_text)
        del broken["steps"][0]["stepId"]
        invalid = tool_failure(
            await client.call_tool(
                "plan_validate", {"document": json.dumps(broken), "filename": "p.json"}
            )
        )
        assert "steps[0].stepId" in invalid["message"]

        # Refusals: ponder's code and the fix, never a traceback.
        path = tool_failure(await client.call_tool("status", {"run_id": "../etc"}))
        assert path["code"] == "run.id_invalid" and path["fix"]
        unknown = tool_failure(await client.call_tool("think", {"task": "x", "profile": "nope"}))
        assert unknown["code"] == "profile.not_found" and "profile list" in unknown["fix"]
        bad = tool_failure(await client.call_tool("think", {"task": "x", "n": "many"}))
        assert bad["code"] == "input.invalid" and "n" in bad["message"]
        extra = tool_failure(await client.call_tool("ask", {"question": "x", "api_key": "k"}))
        assert extra["code"] == "usage.invalid"  # an unknown argument, as an unknown flag is
        planned = tool_failure(
            await client.call_tool(
                "think", {"task": "x", "provider": "sim", "budget": {"max_calls": 3}}
            )
        )
        assert planned["code"] == "budget.planned_calls_exceeded"
        reading = tool_failure(await client.call_tool("think", {"task": "@/etc/passwd"}))
        assert reading["code"] == "input.invalid"
        missing = tool_failure(await client.call_tool("status", {"run_id": "no-such-run-x"}))
        assert missing["code"] == "run.not_found"
        for uri in (
            "ponder://runs/..%2F..%2Fetc/summary",
            "ponder://runs/../etc/summary",
            "ponder://runs/.hidden/summary",
        ):
            with pytest.raises(MCPError, match=r"run\.id_invalid|resource\.invalid"):
                await client.read_resource(uri)
        # An offset past what a file seek takes was an internal.error.
        with pytest.raises(MCPError, match=r"^input\.invalid: offset="):
            await client.read_resource(f"ponder://runs/{run_id}/summary?offset={'9' * 20}")


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("summary", "offset=99999999999999999999"),
        ("report", "offset=9223372036854775808"),  # 2^63
        ("summary", "offset=-1"),
        ("summary", "offset=\u00b2"),  # a digit to str.isdigit, not to int()
        ("trace", "cursor=x"),
        ("trace", f"cursor={'9' * 19}"),
    ],
)
def test_a_page_query_out_of_bounds_is_input_invalid(
    settings: Settings, name: str, query: str
) -> None:
    run_dir = Path(settings.runs_dir) / "bounded"
    run_dir.mkdir(parents=True)
    for file in ("summary.json", "report.html", "events.jsonl"):
        (run_dir / file).write_text("{}\n")
    with pytest.raises(PonderError) as info:
        resources.read(settings, f"ponder://runs/bounded/{name}?{query}")
    assert info.value.code == "input.invalid"
    assert str(resources.MAX_QUERY_INT) in info.value.message
    page = resources.read(
        settings, f"ponder://runs/bounded/summary?offset={resources.MAX_QUERY_INT}"
    )
    assert page.text == ""  # the largest offset allowed: past the end, an empty page


def test_record_pages_are_capped(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = Path(settings.runs_dir) / "paged"
    run_dir.mkdir(parents=True)
    (run_dir / "events.jsonl").write_text(
        "".join(json.dumps({"seq": i, "type": "e"}) + "\n" for i in range(7))
    )
    monkeypatch.setattr(resources, "PAGE_RECORDS", 3)
    uri = "ponder://runs/paged/trace"
    pages = []
    while uri:
        page = json.loads(resources.read(settings, uri).text)
        pages.append([e["seq"] for e in page["items"]])
        uri = page["next"]
    assert pages == [[0, 1, 2], [3, 4, 5], [6]]
    monkeypatch.setattr(resources, "PAGE_BYTES", 60)
    page = json.loads(resources.read(settings, "ponder://runs/paged/trace").text)
    assert len(page["items"]) == 2 and page["next"].endswith("?cursor=2")

    html = "<html>" + "".join(f"<p>{i}</p>" for i in range(20)) + "</html>"
    (run_dir / "report.html").write_text(html)
    uri, parts = "ponder://runs/paged/report", []
    while uri:
        contents = resources.read(settings, uri)
        parts.append(contents.text.split("\n<!-- ponder: truncated")[0])
        uri = (contents.meta or {}).get("ponder/next")
    assert len(parts) == -(-len(html) // 60) and "".join(parts) == html
