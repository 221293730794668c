"""``ponder campaign run`` and ``ponder campaign report`` against the session's dev server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from temporalio.client import Client

from activities.config import Settings
from activities.errors import ConfigError
from client.budget_extend import new_limits, require_a_limit
from client.campaign_cli import campaign
from tests.campaigns.helpers import document
from tests.campaigns.test_control import progress_until
from tests.cli import cli_env, ponder, ponder_here
from workflows.budget import BudgetLimits

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


async def test_run_shows_progress_and_the_decision_and_report_rerenders_the_same_bytes(
    tmp_path: Path, settings: Settings, server_address: str, worker_queue: str
) -> None:
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps(document(seeds=[0, 1])))
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    done = await ponder("campaign", "run", str(path), "--run-id", "camp-cli-1", env=env)
    assert done.code == 0, done.err
    assert done.out.startswith("recommendation: ")
    assert "  deep: " in done.out
    assert "[completed] cells 12/12 done, 0 running, 0 failed" in done.err
    assert "leader deep" in done.err
    run_dir = settings.runs_dir / "camp-cli-1"
    before = {n: (run_dir / n).read_bytes() for n in ("report.md", "report.html")}
    report = await ponder("campaign", "report", "camp-cli-1", env=env)
    assert report.code == 0, report.err
    assert report.out.encode() == before["report.md"]
    assert {n: (run_dir / n).read_bytes() for n in before} == before


def test_run_refuses_an_invalid_file_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps(document(comparator="ghost")))
    done = CliRunner().invoke(campaign, ["run", str(path)])
    assert done.exit_code == 2 and "[comparator.unknown]" in done.output


def test_report_of_an_unknown_run_is_one_line(tmp_path: Path) -> None:
    done = ponder_here("campaign", "report", "nothing-here", env=cli_env(tmp_path))
    assert done.code == 2 and "no campaign report for 'nothing-here'" in done.err


async def test_a_paused_campaign_exits_75_and_the_shared_commands_finish_it(
    tmp_path: Path, settings: Settings, server_address: str, worker_queue: str
) -> None:
    path = tmp_path / "campaign.json"
    doc = document(seeds=[0], budget={"max_calls": 2})
    doc["variants"][1] = {"id": "other", "kind": "single", "config": {"model": "sim:default"}}
    path.write_text(json.dumps(doc))
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    done = await ponder("campaign", "run", str(path), "--run-id", "camp-cli-2", env=env)
    assert done.code == 75, done.err
    # 4 cells left at 1 call each: the suggested extension lets the campaign finish.
    resume = "ponder extend camp-cli-2 --calls +4"
    assert f"campaign camp-cli-2 paused: max_calls reached; continue with: {resume}" in done.err
    status = await ponder("status", "camp-cli-2", env=env)
    assert status.code == 0, status.err
    assert "[awaiting_budget] cells 2/6 done, 0 running" in status.out
    assert "limits max_calls=2;" in status.out and f"continue with: {resume}" in status.out
    refused = await ponder("campaign", "extend", "camp-cli-2", "--calls", "1", env=env)
    assert refused.code == 2 and "extend refused: max_calls=1 is below" in refused.err
    extended = await ponder("extend", "camp-cli-2", "--calls", "+4", "--follow", env=env)
    assert extended.code == 0, extended.err
    assert "budget now max_calls=6" in extended.err  # format_limits, not a Python dict
    assert extended.out.startswith("recommendation: ")
    watched = await ponder("watch", "camp-cli-2", env=env)  # an ended campaign: its outcome
    assert watched.code == 0 and watched.out == extended.out
    run_dir = settings.runs_dir / "camp-cli-2"
    before = (run_dir / "report.html").read_bytes()
    report = await ponder("report", "camp-cli-2", env=env)
    assert report.code == 0 and report.out.strip() == str(run_dir / "report.html")
    assert (run_dir / "report.html").read_bytes() == before


async def test_ponder_cancel_stops_a_detached_campaign_with_its_partial_report(
    tmp_path: Path, settings: Settings, server_address: str, worker_queue: str, client: Client
) -> None:
    path = tmp_path / "campaign.json"
    doc = document(seeds=[0], concurrency=1)
    doc["variants"][1] = {
        "id": "slow",
        "kind": "single",
        "config": {"model": "sim:default,latency=fixed:15000"},
    }
    path.write_text(json.dumps(doc))
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run = ("campaign", "run", str(path), "--run-id", "camp-cli-3", "--detach")
    started = await ponder(*run, env=env)
    assert started.code == 0 and started.out.strip() == "camp-cli-3", started.err
    handle = client.get_workflow_handle("camp-cli-3")
    await progress_until(handle, lambda p: p.cells_done == 3 and p.cells_running == 1)
    cancelled = await ponder("cancel", "camp-cli-3", env=env)
    assert cancelled.code == 1 and "run camp-cli-3: cancelled" in cancelled.err
    run_dir = settings.runs_dir / "camp-cli-3"
    assert f"partial report: {run_dir / 'report.html'}" in cancelled.err
    rows = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert [r["failure_class"] for r in rows] == [None, None, None, "cancelled"]
    assert rows[-1]["calls"] == 1  # the slow call in flight was paid and is recorded
    assert "(cancelled, 4 of 6 cells)" in (run_dir / "report.md").read_text()


def test_extend_limits_are_absolute_or_added_and_refused_by_name() -> None:
    current = BudgetLimits(max_calls=10, max_usd=1.5)
    new = new_limits(current, calls="+4", usd="2", output_tokens="+100")
    assert new.model_dump(exclude_none=True) == {
        "max_calls": 14,
        "max_usd": 2.0,
        "max_output_tokens": 100,
    }
    with pytest.raises(ConfigError, match=r"--input-tokens '1\.5' is not a number"):
        new_limits(current, input_tokens="1.5")
    with pytest.raises(ConfigError, match="extend needs at least one new limit"):
        require_a_limit(None, None, None, None)
