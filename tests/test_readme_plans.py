"""The README's Plans recipes run as written: the CLI walk through examples/plans/release.yaml,
the same control through the ``temporal`` CLI and from Python, and Validation."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.readme_shell import ROOT, Shell, alternatives, lines, readme_shell, run_id
from tests.test_readme import fenced, section

PLANS = "## Plans"


async def settled(sh: Shell, run: str, state: str) -> str:
    """``ponder status RUN`` once it shows ``state`` (the run moves on after an update)."""
    out = ""
    for _ in range(60):
        out = await sh.run(f"ponder status {run}", expect=None)
        if re.search(rf"state\s+{state}", out):
            return out
        await asyncio.sleep(0.5)
    raise AssertionError(f"{run} never reached {state}:\n{out}")


@pytest.mark.timeout(300)
async def test_plan_cli_recipes_run_as_written(tmp_path: Path) -> None:
    block = fenced(section(PLANS), "sh")[0]
    start, resume, gate, status, extend, verbs = lines(block)
    printed = re.search(r"#\s+(continue with: .*)", block)
    assert printed, "the README shows what the paused run prints"
    async with readme_shell(tmp_path) as sh:
        out = await sh.run(start, expect=75)
        run = run_id(out)
        assert printed.group(1).replace("RUN_ID", run) in out
        await sh.run(resume.replace("RUN_ID", run), expect=75)
        assert "gate approve" in await sh.run(f"ponder status {run}")
        await sh.run(gate.replace("RUN_ID", run), expect=0)
        assert re.search(r"state\s+completed", await sh.run(status.replace("RUN_ID", run)))
        # extend, watch and cancel act on a live run: the first line again, its id for RUN_ID.
        other = run_id(await sh.run(start, expect=75))
        out = await sh.run(extend.replace("RUN_ID", other), expect=75)  # still at its pause
        assert re.search(r"left of 4 \(cap 4\)", await sh.run(f"ponder status {other}"))
        watch, cancel = alternatives(verbs.replace("RUN_ID", other))
        assert "continue with: ponder resume" in await sh.run(watch, expect=75)
        await sh.run(cancel, expect=1)
        assert re.search(r"state\s+cancelled", await sh.run(f"ponder status {other}"))


@pytest.mark.timeout(120)
async def test_plan_validation_recipes_run_as_written(tmp_path: Path) -> None:
    (block,) = fenced(section("### Validation"), "sh")
    validate, as_json, schema = lines(block)
    async with readme_shell(tmp_path) as sh:
        assert "valid" in await sh.run(validate)
        assert json.loads(await sh.run(as_json))["valid"] is True
        assert json.loads(await sh.run(schema))["$schema"]


@pytest.mark.timeout(300)
async def test_plan_control_by_temporal_cli_and_python_runs_as_written(tmp_path: Path) -> None:
    text = section("The same control through the `temporal` CLI")
    (block,) = fenced(text, "sh")
    (snippet,) = fenced(section("The same control through the `temporal` CLI"), "python")
    commands = lines(block)
    plan = yaml.safe_load((ROOT / "examples/plans/release.yaml").read_text())
    async with readme_shell(tmp_path) as sh:
        address = (await sh.run("ponder server address")).strip()
        sh.env["TEMPORAL_ADDRESS"] = address
        worker = await asyncio.create_subprocess_exec(
            "ponder", "worker", cwd=sh.work, env=sh.env, stdout=asyncio.subprocess.DEVNULL
        )
        try:
            # The plan written `[...]` is examples/plans/release.yaml, as JSON.
            start = commands[0].replace(
                '{"schema": "ponder-plan/1", "name": "p", "steps": [...]}', json.dumps(plan)
            )
            assert start != commands[0]
            # The signal forms go to a second run, rel-2: an update and its signal form cannot
            # both answer one gate.
            signals = [c.replace("rel-1", "rel-2") for c in commands if " signal " in c]
            updates = [c for c in commands[1:] if " signal " not in c]
            await sh.run(start)
            await sh.run(start.replace("rel-1", "rel-2"))
            query_status, resume, resolve, extend, events = updates
            assert '"awaiting_input"' in await sh.run(query_status)
            await sh.run(resume)
            resume_signal, gate_signal = signals
            await sh.run(resume_signal)
            for rel in ("rel-1", "rel-2"):
                out = await settled(sh, rel, "awaiting_gate")
                token = re.search(r"token (\S+)", out) or re.search(r"(\d+-[0-9a-f]{12})", out)
                assert token, out
                if rel == "rel-1":
                    await sh.run(extend)  # within the cap (4 calls), at the gate
                    await sh.run(resolve.replace("1-5f0c2a9b7d3e", token.group(1)))
                else:
                    await sh.run(gate_signal.replace("1-5f0c2a9b7d3e", token.group(1)))
                await settled(sh, rel, "completed")
            assert "gate.decided" in await sh.run(events)

            # From Python, with client.connect: `client` and `doc` are given, id rel-py.
            script = sh.write(
                "control.py",
                "import asyncio, os, yaml\n"
                "from activities.config import load_settings\n"
                "from client.connect import connect\n\n"
                "async def main():\n"
                "    client = await connect(load_settings(), os.environ['TEMPORAL_ADDRESS'])\n"
                "    doc = yaml.safe_load(open('examples/plans/release.yaml'))\n"
                "    doc['steps'][1]['prompt'] = 'Draft release notes.'  # no ${input.version}\n"
                + textwrap.indent(snippet.replace('"rel-1"', '"rel-py"'), "    ")
                + "\nasyncio.run(main())\n",
            )
            await sh.run(f"PYTHONPATH={ROOT} {sys.executable} {script}")
            await settled(sh, "rel-py", "completed")
        finally:
            worker.terminate()
            await worker.wait()
