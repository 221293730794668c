"""The README's five-minute tour runs as pasted, in order, taken from its text: a tournament, an
ask, a plan through its pause and gate, a campaign, the runs list and a report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.readme_shell import lines, readme_shell
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

EXIT = re.compile(r"#\s*exit (\d+)")


@pytest.mark.timeout(400)
async def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    (block,) = fenced(section("## A five-minute tour"), "sh")
    think, ask, validate, plan, resume, gate, campaign, runs, report = lines(block)
    async with readme_shell(tmp_path) as sh:

        async def run(line: str, timeout: float = 150) -> str:
            said = EXIT.search(line)  # the exit code the line's comment promises, else 0
            return await sh.run(line, expect=int(said.group(1)) if said else 0, timeout=timeout)

        out = await run(think)
        assert "15 / 15" in out and "winner:" in out, out[-2000:]
        assert "[sim q=" in await run(ask)
        assert "valid" in await run(validate)
        assert "continue with: ponder resume plan-tour --arg approved_by=VALUE" in await run(plan)
        await run(resume)
        await run(gate)
        plan_summary = json.loads((sh.home / "runs" / "plan-tour" / "progress.json").read_text())
        assert "completed" in json.dumps(plan_summary)
        assert "recommendation: " in await run(campaign, timeout=300)
        listed = await run(runs)
        for run_id in ("plan-tour", "camp-tour"):
            assert run_id in listed
        assert (sh.home / "runs" / "camp-tour" / "report.html").is_file()
        assert "camp-tour/report.html" in await run(report)
