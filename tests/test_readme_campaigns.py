"""The README's Campaigns and Wire replay recipes run as written (taken from its text)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from tests.readme_shell import ROOT, Shell, alternatives, lines, readme_shell
from tests.test_readme import fenced, section


async def live_campaign(sh: Shell, line: str, known: set[str]) -> tuple[asyncio.Task[str], str]:
    """Start the README's live line in the background; its run id once ``ponder runs`` lists it."""
    task = asyncio.ensure_future(sh.run(line, expect=None, timeout=150))
    for _ in range(120):
        rows = json.loads(await sh.run("ponder runs --kind campaign --json"))
        new = {row["run_id"] for row in rows} - known
        if new:
            (run,) = new
            return task, run
        await asyncio.sleep(0.25)
    raise AssertionError("the campaign never appeared in ponder runs")


@pytest.mark.timeout(300)
async def test_campaign_recipes_run_as_written(tmp_path: Path) -> None:
    (block,) = fenced(section("## Campaigns (`ponder campaign`)"), "sh")
    validate, dry_run, live, verbs = lines(block)
    async with readme_shell(tmp_path) as sh:
        assert "valid campaign" in await sh.run(validate)
        assert "worst case" in await sh.run(dry_run)
        # The shared verbs on two live runs of the live line at once: one extended at once and
        # followed to its end, the other cancelled (the ID each time is what `ponder runs` lists).
        first, one = await live_campaign(sh, live, set())
        status, watch, extend, cancel, report = alternatives(verbs.replace("ID", one))
        extended = asyncio.ensure_future(sh.run(extend, timeout=200))  # follows it to its end
        second, two = await live_campaign(sh, live, {one})
        await sh.run(cancel.replace(one, two), expect=1)
        await second
        assert "cells " in await sh.run(status)
        await extended
        assert "recommendation" in await sh.run(watch)
        assert "report" in await sh.run(report)
        assert "recommendation: " in await first
        summary = json.loads((sh.home / "runs" / two / "summary.json").read_text())
        assert summary["status"] == "cancelled"


@pytest.mark.timeout(300)
async def test_wire_replay_recipes_run_as_written(tmp_path: Path) -> None:
    (block,) = fenced(section("### Wire replay"), "sh")
    record, replay = lines(block)
    # campaign.yaml: the deep-vs-single example on two seeds (12 cells), written here.
    doc = yaml.safe_load((ROOT / "examples/campaigns/deep-vs-single.yaml").read_text())
    doc |= {"seeds": [0, 1], "min_pairs": 2}
    async with readme_shell(tmp_path) as sh:
        sh.write("campaign.yaml", yaml.safe_dump(doc))
        recorded = await sh.run(record)
        replayed = await sh.run(replay)
        decision = [line for line in recorded.splitlines() if line.startswith("recommendation")]
        assert decision and decision[0] in replayed
        original = (sh.home / "runs" / "camp-1" / "report.md").read_text()
        replays = [p for p in (sh.home / "runs").iterdir() if p.name.startswith("campaign-")]
        (copy,) = [p for p in replays if "." not in p.name]
        assert (copy / "report.md").read_text().replace(copy.name, "camp-1") == original
