"""The README's first block: ``make demo`` runs as written; ``make test`` is what CI runs."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.cli import cli_env
from tests.readme_shell import ROOT, lines
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


@pytest.mark.timeout(240)
async def test_make_demo_runs_as_written(tmp_path: Path) -> None:
    (block,) = fenced(section("# ponder"), "sh")
    demo, test, activate = [line.split("#")[0].strip() for line in lines(block)]
    # The README's first two commands: the main job, then the suite; activation comes after.
    assert (demo, test, activate) == ("make demo", "make test", ". .venv/bin/activate")
    # `make test` is the suite this test is part of: CI runs exactly it.
    assert re.search(r"^make test$", (ROOT / ".ci/run").read_text(), re.MULTILINE)
    # -o .venv/bin/ponder: the venv this test runs in is never rebuilt under it (a no-op right
    # after `make install`, as in CI). PONDER_HOME is the test's: the default, ~/.ponder, is
    # the one every later command uses too.
    command = demo.replace("make ", "make -o .venv/bin/ponder ")
    home = tmp_path / "home"
    env = cli_env(home, PYTHONPATH=str(ROOT))
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out = (await asyncio.wait_for(process.communicate(), 230))[0].decode()
    assert process.returncode == 0, out[-4000:]
    # What the README says it shows: the winner, its true quality beside the best, report.html.
    assert "285 / 285" in out and "winner:" in out, out[-3000:]
    assert re.search(r"simulated: winner true quality [-\d.]+, best candidate \S+ [-\d.]+", out)
    report = re.search(r"report: (\S+report\.html)", out)
    assert report and Path(report.group(1)).is_file() and str(home) in report.group(1)
    # The second line puts this venv's ponder on the shell's PATH, so the bare `ponder` of
    # every later recipe (and of every printed hint) runs.
    found = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        f"{activate} && command -v ponder && ponder runs --json",
        cwd=ROOT,
        env=cli_env(home, PYTHONPATH=str(ROOT), PATH="/usr/bin:/bin"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    listed = (await asyncio.wait_for(found.communicate(), 120))[0].decode()
    assert found.returncode == 0, listed
    found_at = Path(listed.splitlines()[0])
    assert found_at.parent.resolve() == (ROOT / ".venv/bin").resolve(), listed
    demo_run = re.search(r"\b(think-[0-9a-f]{12})\b", out)
    assert demo_run and demo_run.group(1) in listed  # the demo's run, in every command's home
