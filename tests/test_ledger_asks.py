"""An Ask on a spent shared ledger waits for it instead of failing, on the dev server with a
real worker and the real CLI: ``ponder ask --ledger NAME`` prints that it waits and what lets it
go on, ``ponder ledger extend NAME`` resumes it, and it completes with the one call it made."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from activities.ledger_config import LedgerConfig
from client.ledgers import ledger_view
from tests.cli import cli_env, finish, ponder, start_ponder
from tests.test_ledger_runs import until
from worker.worker import WorkerOptions, running_worker
from workflows.ask import ASK_LEDGER_WAITS_PATCH, LEDGER_WAIT_MEMO
from workflows.ask_types import AskInput, AskResult
from workflows.ledger.types import LedgerView
from workflows.names import ASK


@pytest.fixture
def name() -> str:
    return f"t{uuid.uuid4().hex[:12]}"  # one entity per test: they share the dev server


@pytest.fixture
def ledger_settings(settings: Settings, name: str) -> Settings:
    config = LedgerConfig(calls=0, block=4, hold_ttl_s=5.0)  # spent before the first call
    return settings.model_copy(update={"ledgers": {name: config}})


@pytest.fixture
async def queue(client: Client, ledger_settings: Settings) -> AsyncIterator[str]:
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, ledger_settings, WorkerOptions(task_queue=queue)):
        yield queue


@pytest.mark.parametrize("command", ["ask", "mutate"])
async def test_a_single_call_on_a_spent_ledger_waits_and_extend_resumes_it(
    command: str,
    client: Client,
    ledger_settings: Settings,
    queue: str,
    name: str,
    server_address: str,
    tmp_path: Path,
) -> None:
    config = tmp_path / "client.toml"
    config.write_text(f"[ledgers.{name}]\ncalls = 0\n")
    env = cli_env(
        ledger_settings.home,
        TEMPORAL_ADDRESS=server_address,
        PONDER_TASK_QUEUE=queue,
        PONDER_CONFIG=str(config),
    )
    run_id = f"{command}-{uuid.uuid4().hex[:12]}"
    if command == "ask":
        args = ["ask", "Why?"]
    else:
        (tmp_path / "draft.txt").write_text("A first draft.\n")
        args = ["mutate", str(tmp_path / "draft.txt"), "--task", "Why?", "--critique", "More."]
    asking = await start_ponder(*args, "--ledger", name, "--run-id", run_id, env=env)
    try:

        async def waiting() -> LedgerView | None:
            view = await ledger_view(client, name)
            return view if view is not None and view.waiting == [run_id] else None

        view = await until(waiting, "the ledger to list the ask as waiting")
        assert view.calls == 0 and view.blocking == "calls"
        handle = client.get_workflow_handle(run_id, result_type=AskResult)

        async def memo() -> Any:
            return await (await handle.describe()).memo_value(LEDGER_WAIT_MEMO, None)

        assert await until(memo, "the ask's memo to name its ledger") == {
            "ledger": name,
            "limit": "calls",
        }
        line = f"ponder: waiting for ledger {name} (calls): ponder ledger extend {name}\n"
        assert asking.stderr is not None
        shown = (await asyncio.wait_for(asking.stderr.readline(), 60)).decode()
        assert shown == line  # the first thing the command says
        status = await ponder("status", run_id, "--json", env=env)
        assert status.code == 0, status.err
        waits = f"ledger {name} (calls): ponder ledger extend {name}"
        assert json.loads(status.out)["waiting_for"] == waits, status.out
        extended = await ponder("ledger", "extend", name, "--calls", "+1", env=env)
        assert extended.code == 0, extended.err
        done = await finish(asking)
    finally:
        if asking.returncode is None:
            asking.kill()
            await asking.wait()
    assert done.code == 0, done.err
    assert done.out.strip()  # the answer
    assert "waiting for ledger" not in done.err, done.err  # once, not again after
    result = await handle.result()
    assert result.run_id == run_id
    assert await memo() is None  # cleared once it went on

    async def settled() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and view.holds == 0 else None

    final = await until(settled, "the ask's block to be handed back")
    assert final.calls == 1 and final.waiting == []
    completed = [
        e
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
    assert len(completed) == 2  # the one model call, then its answer written


async def test_an_ask_without_a_ledger_records_no_patch_marker(client: Client, queue: str) -> None:
    """Runs without a ledger do what they always did: their histories are unchanged."""
    run_id = f"ask-{uuid.uuid4().hex[:12]}"
    handle = await client.start_workflow(
        ASK,
        AskInput(question="Why?", model="sim:default"),
        id=run_id,
        task_queue=queue,
        result_type=AskResult,
    )
    await handle.result()
    markers = [
        e
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]
    assert not any(ASK_LEDGER_WAITS_PATCH.encode() in e.SerializeToString() for e in markers)


def test_ask_takes_ledger() -> None:
    from click.testing import CliRunner

    from client.ask_cli import ask

    result = CliRunner().invoke(ask, ["--help"])
    assert result.exit_code == 0 and "--ledger NAME" in result.output


async def test_the_mcp_ask_tool_takes_a_ledger_and_its_run_waits_on_it(
    client: Client,
    ledger_settings: Settings,
    queue: str,
    name: str,
    server_address: str,
    tmp_path: Path,
) -> None:
    from tests.mcp.helpers import stdio_client, structured, tool_failure

    config = tmp_path / "client.toml"
    config.write_text(f"[ledgers.{name}]\ncalls = 0\n")
    env = cli_env(
        ledger_settings.home,
        TEMPORAL_ADDRESS=server_address,
        PONDER_TASK_QUEUE=queue,
        PONDER_CONFIG=str(config),
    )
    async with stdio_client(env) as mcp:
        unknown = tool_failure(await mcp.call_tool("ask", {"question": "Why?", "ledger": "nope"}))
        assert unknown["code"] == "ledger.unknown", unknown
        started = structured(await mcp.call_tool("ask", {"question": "Why?", "ledger": name}))
        run_id = started["run_id"]

        async def waiting() -> LedgerView | None:
            view = await ledger_view(client, name)
            return view if view is not None and view.waiting == [run_id] else None

        await until(waiting, "the ledger to list the tool's ask as waiting")
        extended = await ponder("ledger", "extend", name, "--calls", "+1", env=env)
        assert extended.code == 0, extended.err
        done = structured(await mcp.call_tool("result", {"run_id": run_id, "wait": True}))
        assert done["status"] == "completed", done
