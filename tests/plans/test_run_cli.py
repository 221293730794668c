"""``ponder plan run``, ``ponder resume`` and ``ponder gate`` as a user runs them (subprocesses).

The CLI is a plain client of the session's dev server (TEMPORAL_ADDRESS); one ``ponder worker``
process serves the task queue the CLI names (PONDER_TASK_QUEUE) for the whole module.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from client.session import wait_for_worker
from tests.cli import cli_env, ponder, ponder_here, start_ponder

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "examples" / "plans" / "release.yaml"


@pytest.fixture(scope="module")
async def worker_env(
    tmp_path_factory: pytest.TempPathFactory, server_address: str
) -> AsyncIterator[dict[str, str]]:
    """One ``ponder worker`` process for the module (as a user runs one), on its own queue and
    home; the CLI is a client. Shared: each test's runs have their own ids, and a test's files
    (plans, a ``ponder.toml`` named with PONDER_CONFIG) stay in its own tmp_path, never the
    home, so no test's configuration reaches another's commands."""
    home = tmp_path_factory.mktemp("plan-cli-home")
    queue = f"cli-{uuid.uuid4().hex[:8]}"
    environment = cli_env(home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
    worker = await start_ponder("worker", env=environment)
    try:
        await wait_for_worker(await Client.connect(server_address), queue, 60)
        yield environment
    finally:
        worker.terminate()
        await worker.wait()


@pytest.fixture
def env(worker_env: dict[str, str]) -> dict[str, str]:
    return dict(worker_env)


@pytest.fixture
def home(env: dict[str, str]) -> Path:
    """Where the shared worker keeps the runs (their reports)."""
    return Path(env["PONDER_HOME"])


async def test_run_pause_resume_gate_through_the_cli(env: dict[str, str], home: Path) -> None:
    paused = await ponder(
        "plan",
        "run",
        str(RELEASE),
        "--arg",
        "version=1.2",
        "--run-id",
        "cli-release",
        env=env,
    )
    assert paused.code == 75, paused.err
    assert "continue with: ponder resume cli-release --arg approved_by=VALUE" in paused.err

    gate = await ponder("resume", "cli-release", "--arg", "approved_by=ada", env=env)
    assert gate.code == 75, gate.err
    assert "continue with: ponder gate approve cli-release ship  (or: revise, kill)" in gate.err

    conflict = await ponder("resume", "cli-release", "--arg", "approved_by=bob", env=env)
    assert conflict.code == 2 and "stale-input-refused" in conflict.err

    shown = await ponder("status", "cli-release", env=env)
    assert shown.code == 0, shown.err
    assert "awaiting_gate (gate-pending)" in shown.out and "gate     ship token" in shown.out
    assert "continue with: ponder gate approve cli-release ship  (or: revise, kill)" in shown.out
    assert f"report   {home}/runs/cli-release/report.html" in shown.out
    watched = await ponder("watch", "cli-release", env=env)
    assert watched.code == 75
    assert "ponder gate approve cli-release ship  (or: revise, kill)" in watched.err

    unknown = await ponder("gate", "approve", "cli-release", "nope", env=env)
    assert unknown.code == 2 and "unknown-step" in unknown.err

    done = await ponder("gate", "approve", "cli-release", "ship", env=env)
    assert done.code == 0, done.err
    assert done.out.startswith("Simulated answer to: Announce the release.")
    assert re.search(r"run cli-release completed: 2 calls \(simulated\)", done.err)
    assert panel_state(done.err) == "completed"
    assert report_line(done.err, home, "cli-release")  # its own line, after the panel
    report = await ponder("report", "cli-release", env=env)
    assert report.code == 0, report.err
    html = Path(report.out.strip()).read_text()
    rows = dict(re.findall(r'<tr class="step-row" data-step="([^"]+)"[^>]*>(.*?)</tr>', html))
    assert rows["ship"].count("approve") == 1 and "<td>settled</td>" in rows["ship"]
    assert "AWAITING_OWNER" in rows["owner"]  # the pause's wait
    assert "<td>1</td>" in rows["notes"] and "owner" in rows["notes"]  # one attempt, after owner


def panel_state(err: str) -> str:
    """The state row of the last status panel a follow printed."""
    return re.findall(r"^state\s+(.+?)\s*$", err, re.M)[-1]


def report_line(err: str, home: Path, run_id: str) -> bool:
    """``report: PATH`` printed on a line of its own (never glued to the panel's tokens row)."""
    line = f"report: {home}/runs/{run_id}/report.html"
    glued = [row for row in err.splitlines() if "report:" in row and row != line]
    assert not glued, glued
    return line in err.splitlines()


def test_an_invalid_plan_exits_2_before_a_server_starts(tmp_path: Path) -> None:
    # Refused on the document alone: in this process (ponder_here fails on a command that
    # connects), not a ponder process (most of a second of CPU).
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: ponder-plan/1\nname: bad\nsteps:\n  - {id: a, kind: agent}\n")
    invalid = ponder_here("plan", "run", str(bad), env=cli_env(tmp_path / "home"))
    assert invalid.code == 2 and "steps[0].prompt: [field.missing]" in invalid.err


async def test_exit_codes_for_invalid_and_failed_plans(env: dict[str, str]) -> None:
    paused = await ponder(
        "plan", "run", str(RELEASE), "--arg", "version=2", "--arg", "approved_by=eve",
        "--run-id", "cli-kill", env=env,
    )  # fmt: skip
    assert paused.code == 75
    assert "ponder gate approve cli-kill ship  (or: revise, kill)" in paused.err
    killed = await ponder("gate", "kill", "cli-kill", "ship", env=env)
    assert killed.code == 1 and "gate-killed" in killed.err

    detached = await ponder(
        "plan", "run", str(RELEASE), "--arg", "version=3", "--run-id", "cli-detached", "--detach",
        env=env,
    )  # fmt: skip
    assert detached.code == 0 and detached.out.strip() == "cli-detached"
    cancelled = await ponder("cancel", "cli-detached", env=env)
    assert cancelled.code == 1 and "run cli-detached: cancelled" in cancelled.err
    as_json = await ponder("status", "cli-detached", "--json", env=env)
    assert as_json.code == 0 and '"state": "cancelled"' in as_json.out


async def test_a_budget_pause_continues_with_ponder_extend(
    env: dict[str, str], tmp_path: Path, home: Path
) -> None:
    plan = tmp_path / "fan.yaml"
    plan.write_text(
        # The budget fits the region's three items but not the call spent before it.
        "schema: ponder-plan/1\nname: fan\nbudget: {calls: 3}\nsteps:\n"
        "  - {id: first, kind: agent, prompt: first, model: 'sim:default'}\n"
        "  - {id: fan, kind: fanout, deps: [first], fanout: {over: [a, b, c], chain: [fan.one]}}\n"
        "  - {id: fan.one, kind: agent, prompt: one, model: 'sim:default'}\n"
    )
    paused = await ponder("plan", "run", str(plan), "--run-id", "cli-fan", env=env)
    assert paused.code == 75, paused.err
    assert "needs: step 'fan' reserves 3 invocation(s) and 2 of 3 are left" in paused.err
    assert "continue with: ponder extend cli-fan --calls " in paused.err
    refused = await ponder("extend", "cli-fan", "--calls", "+9", env=env)
    assert refused.code == 2 and "budget-extension-exhausted" in refused.err
    done = await ponder("extend", "cli-fan", "--calls", "+1", "--follow", env=env)
    assert done.code == 0, done.err
    assert "run cli-fan completed: 4 calls (simulated)" in done.err
    assert panel_state(done.err) == "completed"  # the panel left behind: how the run ended
    assert report_line(done.err, home, "cli-fan")
    # An ended run says so, not "check the run id".
    ended = await ponder("extend", "cli-fan", "--calls", "+2", env=env)
    assert ended.code == 2, ended.err
    assert "run.ended: run cli-fan has already ended (completed): nothing to extend" in ended.err


async def test_executors_come_from_ponder_toml_and_flags(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "ponder.toml").write_text('[executors]\nclaude = "sim:default"\n')
    plan = tmp_path / "family.yaml"
    plan.write_text(
        "schema: ponder-plan/1\nname: family\nsteps:\n"
        "  - {id: a, kind: agent, prompt: Say hi., model: sonnet}\n"
    )
    env = env | {"PONDER_CONFIG": str(tmp_path / "ponder.toml")}
    done = await ponder("plan", "run", str(plan), env=env)
    assert done.code == 0, done.err
    assert done.out.startswith("Simulated answer to: Say hi.")
    unroutable = await ponder("plan", "run", str(plan), "--executor", "claude=", env=env)
    assert unroutable.code == 1 and "plan-model-unroutable" in unroutable.err


async def test_status_shows_each_nested_ledger(env: dict[str, str]) -> None:
    plan = ROOT / "examples" / "plans" / "nested-budgets.yaml"
    done = await ponder("plan", "run", str(plan), "--run-id", "cli-ledgers", env=env)
    assert done.code == 0, done.err
    shown = await ponder("status", "cli-ledgers", env=env)
    assert shown.code == 0, shown.err
    lines = [line.split(None, 1)[1] for line in shown.out.splitlines() if line.startswith("ledger")]
    assert lines[0].startswith("brief (step): calls 1/1, tokens ")
    assert lines[0].endswith("/60000 ms")
    assert lines[1].startswith("angles (step): calls 3/3, tokens ")
    assert lines[2].startswith("polish (subflow): calls 2/2, tokens ")
