"""Plan variants: a PlanRun child per cell, its last step's output is the answer."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from activities.config import Settings
from client.campaign_cli import campaign
from client.documents import load
from tests.campaigns.test_workflow import records
from tests.cli import cli_env, ponder

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "campaigns" / "plan-vs-single.yaml"


def test_the_cli_inlines_the_plan_file_and_reports_its_errors(tmp_path: Path) -> None:
    result = load(str(EXAMPLE))
    assert result.ok, result.errors
    assert result.document is not None
    plan = result.document.variants[1].config["plan"]
    assert isinstance(plan, dict) and plan["name"] == "draft-and-revise"
    broken = tmp_path / "c.yaml"
    broken.write_text(EXAMPLE.read_text().replace("draft-and-revise.plan.yaml", "missing.yaml"))
    out = CliRunner().invoke(campaign, ["validate", str(broken)])
    assert out.exit_code == 2 and "variants[1].config.plan: [document.unreadable]" in out.output
    (tmp_path / "bad.yaml").write_text("schema: ponder-plan/1\nname: x\nsteps: []\n")
    broken.write_text(EXAMPLE.read_text().replace("draft-and-revise.plan.yaml", "bad.yaml"))
    out = CliRunner().invoke(campaign, ["validate", str(broken)])
    assert out.exit_code == 2 and "[variant.config]" in out.output


async def test_a_plan_variant_runs_as_plan_runs(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    done = await ponder("campaign", "run", str(EXAMPLE), "--run-id", "camp-plan-1", env=env)
    assert done.code == 0, done.err
    rows = records(settings.runs_dir / "camp-plan-1")
    plan_rows = [r for r in rows if r["variant"] == "revise"]
    assert len(plan_rows) == 4 and all(r["failure_class"] is None for r in plan_rows)
    assert all(r["calls"] == 2 and r["holdout_score"] is not None for r in plan_rows)
    for row in plan_rows:  # each cell is its own PlanRun with its trace
        cost = json.loads((settings.runs_dir / row["run_id"] / "cost.json").read_text())
        assert cost["outcome"] == "completed" and cost["invocations"] == 2
