"""The Campaigns page's recipes (Wire replay included) run as pasted, in order, taken from its
text. One home and one embedded server serve the whole file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.readme_shell import Shell, cancel_while_its_worker_waits, lines, readme_shell
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

PAGE = "docs/campaigns.md"


@pytest.fixture(scope="module")
async def sh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shell]:
    async with readme_shell(tmp_path_factory.mktemp("readme-campaigns")) as shell:
        yield shell


@pytest.mark.timeout(400)
async def test_campaign_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("# Campaigns (`ponder campaign`)", page=PAGE), "sh")
    validate, dry_run, live, status, watch, report, detach, extend, cancel = lines(block)
    assert "valid campaign" in await sh.run(validate)
    assert "worst case" in await sh.run(dry_run)
    outcome = await sh.run(live, timeout=300)
    assert "recommendation: " in outcome
    assert "cells " in await sh.run(status)
    assert "recommendation" in await sh.run(watch)
    assert "report.html" in await sh.run(report)
    assert (await sh.run(detach)).strip().endswith("camp-b")
    assert "budget now max_calls=160" in await sh.run(extend)  # returns once accepted
    await cancel_while_its_worker_waits(sh, "camp-b", cancel)
    summary = json.loads((sh.home / "runs" / "camp-b" / "summary.json").read_text())
    assert summary["status"] == "cancelled"
    # The tight budget, not the timing, leaves cells for the cancel: it ran 60 + 100 calls' worth.
    assert summary["cells"]["recorded"] < summary["cells"]["planned"]
    assert summary["spent"]["calls"] <= 160


@pytest.mark.timeout(300)
async def test_wire_replay_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("## Wire replay", page=PAGE), "sh")
    record, replay = lines(block)
    recorded = await sh.run(record)
    replayed = await sh.run(replay)
    decision = [line for line in recorded.splitlines() if line.startswith("recommendation")]
    assert decision and decision[0] in replayed
    original = (sh.home / "runs" / "camp-1" / "report.md").read_text()
    replays = [p for p in (sh.home / "runs").iterdir() if p.name.startswith("campaign-")]
    (copy,) = [p for p in replays if "." not in p.name]
    assert (copy / "report.md").read_text().replace(copy.name, "camp-1") == original
