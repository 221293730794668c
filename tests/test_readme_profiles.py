"""The Tournaments page's profiles and past-runs/export recipes run as pasted, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme_shell import lines, readme_shell
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


@pytest.mark.timeout(240)
async def test_profile_runs_and_export_recipes_run_as_written(tmp_path: Path) -> None:
    profiles, runs = fenced(
        section("## Profiles, past runs and export", page="docs/tournaments.md"), "sh"
    )
    save, think, listing, show, delete = lines(profiles)
    past, export = lines(runs)
    async with readme_shell(tmp_path) as sh:
        await sh.run(save)
        out = await sh.run(think)
        assert "calls    " in out and "/ 40" in out  # six candidates, max_calls 40 from the profile
        assert "cheap-sim" in await sh.run(listing)
        shown = await sh.run(show)
        assert "n: 6" in shown and "six on the simulator" in shown
        assert "think-cheap" in await sh.run(past)
        await sh.run(export)
        assert "think-cheap" in (sh.work / "run.md").read_text()
        await sh.run(delete)
        assert "cheap-sim" not in await sh.run(listing)
        assert not (sh.home / "profiles" / "cheap-sim.yaml").exists()
