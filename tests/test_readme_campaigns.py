"""The README's Campaigns and Wire replay recipes run as pasted, in order (taken from its text).
One home and one embedded server serve the whole file."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from client.embedded import EmbeddedServer
from tests.readme_shell import Shell, lines, readme_shell
from tests.test_process import background_workers
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


@pytest.fixture(scope="module")
async def sh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shell]:
    async with readme_shell(tmp_path_factory.mktemp("readme-campaigns")) as shell:
        yield shell


@pytest.mark.timeout(400)
async def test_campaign_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("## Campaigns (`ponder campaign`)"), "sh")
    validate, dry_run, live, status, watch, report, detach, extend, cancel = lines(block)
    assert "valid campaign" in await sh.run(validate)
    assert "worst case" in await sh.run(dry_run)
    outcome = await sh.run(live, timeout=300)
    assert "recommendation: " in outcome
    assert "cells " in await sh.run(status)
    assert "recommendation" in await sh.run(watch)
    assert "report.html" in await sh.run(report)
    assert (await sh.run(detach)).strip().endswith("camp-b")
    assert "budget now max_calls=2100" in await sh.run(extend)  # returns once accepted
    await cancel_with_cells_left(sh, "camp-b", cancel)
    summary = json.loads((sh.home / "runs" / "camp-b" / "summary.json").read_text())
    assert summary["status"] == "cancelled"


@contextlib.contextmanager
def stopped(pids: list[int]) -> Iterator[None]:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


async def cancel_with_cells_left(sh: Shell, run_id: str, cancel: str) -> None:
    """Run the recipe's ``cancel`` line while the campaign still has cells to run: its worker
    is stopped from before the cancel is sent until the request is in history, so sim cells
    (milliseconds each) cannot finish the campaign first on a quiet machine (seen: the run
    completed during ``extend`` and the line cancelled nothing)."""
    workers = background_workers(sh.home)
    assert workers, "the campaign's background worker is not running"
    async with EmbeddedServer(sh.home).lease() as info:
        handle = (await Client.connect(info.address)).get_workflow_handle(run_id)
        with stopped(workers):
            process = await sh.start(cancel)
            deadline = asyncio.get_running_loop().time() + 120
            while True:
                kinds = [e.event_type async for e in handle.fetch_history_events()]
                if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in kinds:
                    break
                assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED not in kinds
                assert asyncio.get_running_loop().time() < deadline, "no cancel was requested"
                await asyncio.sleep(0.1)
        assert await asyncio.wait_for(process.wait(), 150) == 1  # the recipe's "exit 1"


@pytest.mark.timeout(300)
async def test_wire_replay_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("### Wire replay"), "sh")
    record, replay = lines(block)
    recorded = await sh.run(record)
    replayed = await sh.run(replay)
    decision = [line for line in recorded.splitlines() if line.startswith("recommendation")]
    assert decision and decision[0] in replayed
    original = (sh.home / "runs" / "camp-1" / "report.md").read_text()
    replays = [p for p in (sh.home / "runs").iterdir() if p.name.startswith("campaign-")]
    (copy,) = [p for p in replays if "." not in p.name]
    assert (copy / "report.md").read_text().replace(copy.name, "camp-1") == original
