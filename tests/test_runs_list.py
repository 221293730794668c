"""``ponder runs`` and ``ponder export``: runs from the store and the server, portable bundles."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Settings
from client.bundles import bundle, render
from client.run_list import list_runs, parse_since
from tests.cli import cli_env, ponder, ponder_here
from tests.tournament.helpers import start
from workflows.errors import PonderError

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


async def test_runs_and_export_from_the_command_line(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    # Plain clients of the session's dev server, served by this test's worker (same home).
    tmp_path = settings.home
    env = cli_env(
        tmp_path,
        OPENAI_API_KEY="sk-test-export-0123456789",
        TEMPORAL_ADDRESS=server_address,
        PONDER_TASK_QUEUE=worker_queue,
    )
    suffix = uuid.uuid4().hex[:8]
    t_one, a_one = f"t-one-{suffix}", f"a-one-{suffix}"
    think = await ponder(
        "think", "Sort a list", "--provider", "sim", "--seed", "1", "--run-id", t_one, env=env
    )
    assert think.code == 0, think.err
    ask = await ponder("ask", "Hello?", "--model", "sim:default", "--run-id", a_one, env=env)
    assert ask.code == 0, ask.err

    listed = await ponder("runs", "--json", env=env)
    assert listed.code == 0, listed.err
    rows = {r["run_id"]: r for r in json.loads(listed.out)}
    summary = json.loads((tmp_path / f"runs/{t_one}/summary.json").read_text())
    t = rows[t_one]
    assert (t["kind"], t["status"], t["calls"]) == ("tournament", "completed", 15)
    assert t["outcome"] == f"winner {summary['winner_id']}"
    assert t["on_server"] and t["in_store"] and t["simulated"]
    a = rows[a_one]
    assert (a["kind"], a["status"], a["calls"]) == ("ask", "completed", 1)
    # Newest first: the ask started after the tournament.
    order = [r["run_id"] for r in json.loads(listed.out)]
    assert order.index(a_one) < order.index(t_one)

    only_asks = json.loads((await ponder("runs", "--kind", "ask", "--json", env=env)).out)
    assert {r["kind"] for r in only_asks} == {"ask"}
    # The session server also holds other tests' runs; this home's store has only these two.
    assert [r["run_id"] for r in only_asks if r["in_store"]] == [a_one]
    table = await ponder("runs", "--since", "1h", env=env)
    assert t_one in table.out and "tournament" in table.out and summary["winner_id"] in table.out

    # A secret that reached the run directory (by any route) never leaves it in a bundle.
    with (tmp_path / f"runs/{t_one}/events.jsonl").open("a") as f:
        f.write(json.dumps({"seq": 99, "type": "x", "data": {"authorization": "Bearer abc"}}))
        f.write(
            "\n" + json.dumps({"seq": 100, "type": "y", "data": {"note": env["OPENAI_API_KEY"]}})
        )
        f.write("\n")
    for fmt in ("json", "jsonl", "markdown"):
        out = tmp_path / f"bundle.{fmt}"
        done = await ponder("export", t_one, "--format", fmt, "--output", str(out), env=env)
        assert done.code == 0, done.err
        text = out.read_text()
        assert "sk-test-export" not in text and "Bearer abc" not in text
        assert summary["winner_id"] in text
    data = json.loads((tmp_path / "bundle.json").read_text())
    assert data["format"] == "ponder-run-bundle/1"
    assert len(data["comparisons"]) == 4 + 4  # quick: n*k/2 judged in generation 1, n*m/2 final
    assert data["texts"]["final"] == (tmp_path / f"runs/{t_one}/artifacts/final.txt").read_text()
    assert "raw-events" not in data and not any("prompt" in k for k in data)
    lines = [json.loads(x) for x in (tmp_path / "bundle.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "run" and lines[0]["run_id"] == t_one
    assert sum(1 for x in lines if x["type"] == "comparison") == 8
    markdown = (tmp_path / "bundle.markdown").read_text()
    assert "## Leaderboard" in markdown and "| 1 | " + summary["winner_id"] in markdown

    for bad_id in ("a/b", "..", "/etc/passwd"):
        with pytest.raises(PonderError, match=r"run\.id_invalid"):
            bundle(settings, bad_id)
    unknown = await ponder("export", "no-such-run", env=env)
    assert unknown.code == 2 and "run.not_found" in unknown.err


def test_a_bad_since_or_run_id_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    """Refused on the argument alone, so checked in this process (``ponder_here``): a ``ponder``
    process each would cost most of a second of CPU."""
    env = cli_env(tmp_path)
    bad = ponder_here("runs", "--since", "yesterday", env=env)
    assert bad.code == 2 and "--since 'yesterday'" in bad.err
    refused = ponder_here("export", "../etc", env=env)
    assert refused.code == 2 and "run.id_invalid" in refused.err, refused.err


async def test_server_rows_join_the_store(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    done_id, live_id = f"rl-{uuid.uuid4().hex[:8]}", f"rl-{uuid.uuid4().hex[:8]}"
    await (await start(client, worker_queue, run_id=done_id, model="sim:default", seed=1)).result()
    # Started on a queue no worker polls: only the server knows it (no artifacts yet).
    live = await start(client, f"idle-{uuid.uuid4()}", run_id=live_id, model="sim:default")
    try:
        # The server's list is its visibility store, which a just-started run reaches a moment
        # later on a busy machine.
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            rows = {r.run_id: r for r in await list_runs(settings, client, since="10m")}
            if {done_id, live_id} <= set(rows):
                break
            assert asyncio.get_running_loop().time() < deadline, f"not listed: {set(rows)}"
            await asyncio.sleep(0.2)
        assert rows[done_id].status == "completed" and rows[done_id].calls == 15
        assert rows[done_id].on_server and rows[done_id].in_store
        assert rows[live_id].status == "running" and rows[live_id].kind == "tournament"
        assert rows[live_id].on_server and not rows[live_id].in_store
        store_only = {r.run_id for r in await list_runs(settings, None)}
        assert done_id in store_only and live_id not in store_only
        future = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
        assert await list_runs(settings, client, since=future) == []
        running = await list_runs(settings, client, status="running", kind="tournament")
        assert live_id in {r.run_id for r in running} and done_id not in {r.run_id for r in running}
        assert "candidate" in render(bundle(settings, done_id), "jsonl")
    finally:
        await live.terminate()


def test_since_accepts_durations_and_dates() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert parse_since("2h", now) == now - timedelta(hours=2)
    assert parse_since("1w", now) == now - timedelta(days=7)
    assert parse_since("2026-11-29", now) == datetime(2026, 11, 29, tzinfo=UTC)
    with pytest.raises(Exception, match="neither a duration"):
        parse_since("soon", now)
