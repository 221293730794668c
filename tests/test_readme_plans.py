"""The Plans page's recipes run as pasted, in order: the CLI walk through
examples/plans/release.yaml, the same control through the ``temporal`` CLI and from Python, and
Validation. One home and one embedded server serve the whole file."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator

import pytest
import yaml

from tests.readme_shell import ROOT, Shell, lines, readme_shell
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

PAGE = "docs/plans.md"
PLANS = "# Plans"
TEMPORAL = "The same control through the `temporal` CLI"


@pytest.fixture(scope="module")
async def sh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shell]:
    async with readme_shell(tmp_path_factory.mktemp("readme-plans")) as shell:
        yield shell


async def settled(sh: Shell, run: str, state: str) -> str:
    """``ponder status RUN`` once it shows ``state`` (the run moves on after an update)."""
    out = ""
    for _ in range(120):
        out = await sh.run(f"ponder status {run}", expect=None)
        if re.search(rf"state\s+{state}", out):
            return out
        await asyncio.sleep(0.5)
    raise AssertionError(f"{run} never reached {state}:\n{out}")


@pytest.mark.timeout(400)
async def test_plan_cli_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section(PLANS, page=PAGE), "sh")
    start, resume, gate, status, second, extend, watch, cancel = lines(block)
    printed = re.search(r"#\s+(continue with: .*)", block)
    assert printed, "the page shows what the paused run prints"
    out = await sh.run(start, expect=75)
    assert printed.group(1) in out  # the hint, exactly as the page shows it
    await sh.run(resume, expect=75)
    await sh.run(gate, expect=0)
    assert re.search(r"state\s+completed", await sh.run(status))
    await sh.run(second, expect=75)
    assert "extend_budget accepted" in await sh.run(extend)  # returns once accepted
    assert re.search(r"left of 4 \(cap 4\)", await sh.run("ponder status rel-b"))
    assert "continue with: ponder resume rel-b" in await sh.run(watch, expect=75)
    await sh.run(cancel, expect=1)
    assert re.search(r"state\s+cancelled", await sh.run("ponder status rel-b"))


@pytest.mark.timeout(120)
async def test_plan_validation_recipes_run_as_written(sh: Shell) -> None:
    (block,) = fenced(section("## Validation", page=PAGE), "sh")
    validate, as_json, schema = lines(block)
    assert "valid" in await sh.run(validate)
    assert json.loads(await sh.run(as_json))["valid"] is True
    assert json.loads(await sh.run(schema))["$schema"]


def test_the_shipped_plan_run_input_is_release_yaml() -> None:
    """examples/inputs/release-plan-run.json is release.yaml as the JSON input, never a copy that
    drifts from it."""
    shipped = json.loads((ROOT / "examples/inputs/release-plan-run.json").read_text())
    plan = yaml.safe_load((ROOT / "examples/plans/release.yaml").read_text())
    assert shipped == {"plan": plan, "args": {"version": "1.2"}}


@pytest.mark.timeout(520)
async def test_plan_control_by_temporal_cli_and_python_runs_as_written(sh: Shell) -> None:
    (block,) = fenced(section(TEMPORAL, page=PAGE), "sh")
    (snippet,) = fenced(section(TEMPORAL, page=PAGE), "python")
    # The server and worker of "Driving workflows with the `temporal` CLI", as that section
    # starts them: this file's embedded server, and a worker on task queue `ponder`.
    address = (await sh.run("ponder server address")).strip()
    sh.env["TEMPORAL_ADDRESS"] = address
    worker = await sh.start("ponder worker")
    try:
        # One shell, as pasted: TOKEN carries from one line to the next.
        # A ceiling, not an expectation (its waits once looped for minutes: see the page's note on
        # grep -q under pipefail).
        out = await sh.run("set -euo pipefail\n" + block, timeout=420)
        assert '"awaiting_input"' in out  # the status query before the resume
        assert "gate.decided" in out  # the events query after the gate
        for rel in ("rel-1", "rel-2"):
            await settled(sh, rel, "completed")
        sh.write("control.py", snippet)
        assert "Simulated answer to: Announce the release" in await sh.run("python control.py")
        await settled(sh, "rel-py", "completed")
    finally:
        worker.terminate()
        await worker.wait()
        sh.env.pop("TEMPORAL_ADDRESS")


@pytest.mark.timeout(200)
async def test_the_stratum_flow_recipe_runs_as_written(sh: Shell) -> None:
    (block,) = fenced(section("## Stratum flows", page=PAGE), "sh")
    run, approve = lines(block)
    printed = re.search(r"#\s+(continue with: .*)", block)
    assert printed, "the page shows what the paused run prints"
    assert printed.group(1) in await sh.run(run, expect=75)
    out = await sh.run(approve, expect=0)
    assert "green" in out
