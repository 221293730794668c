"""A saved profile named in a campaign's tournament variant or a plan's tournament step is
expanded client side into explicit fields, so the workflow (and its history) never needs the
profile file; unknown names and profiles with secrets stay refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from activities.config import Settings
from client.campaign_cli import campaign
from client.plan_cli import plan
from client.profiles import ProfileStore, SavedProfile, expand_saved_profiles
from tests.campaigns.helpers import document
from tests.cli import cli_env, ponder

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

TINY = SavedProfile.model_validate(
    {"n": 4, "k": 2, "t": 0, "m": 2, "provider": "sim", "temperatures": {"judge": 0.1}}
)


def _campaign(profile: str) -> dict[str, Any]:
    doc = document(seeds=[0], scenarios=[document()["scenarios"][0]], min_pairs=1)
    doc["variants"][1]["config"] = {"profile": profile, "model": "sim:default,accuracy=0.95"}
    return doc


def _plan(profile: str) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": "saved profile step",
        "steps": [
            {
                "kind": "tournament",
                "id": "best",
                "prompt": "Sort a list",
                "tournament": {"profile": profile, "seed": 3},
            }
        ],
    }


def test_expansion_fills_beneath_explicit_fields(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save("tiny", TINY.model_copy(update={"rubric": "saved rubric"}))
    doc = _campaign("tiny")
    doc["variants"][1]["config"]["rubric"] = "explicit rubric"
    assert expand_saved_profiles(doc, tmp_path, lambda p: f"{p}:default") == []
    config = doc["variants"][1]["config"]
    assert config["profile"] == "quick" and config["custom"]["n"] == 4
    assert config["custom"]["judge_temperature"] == 0.1
    assert config["model"] == "sim:default,accuracy=0.95"  # the document's own wins
    assert config["rubric"] == "explicit rubric"
    steps = _plan("tiny")
    assert expand_saved_profiles(steps, tmp_path, lambda p: f"{p}:default") == []
    step = steps["steps"][0]
    assert step["tournament"]["custom"]["n"] == 4 and step["tournament"]["profile"] == "quick"
    assert step["tournament"]["rubric"] == "saved rubric" and step["model"] == "sim:default"


def test_campaign_validate_takes_a_saved_profile_and_refuses_an_unknown_one(
    tmp_path: Path,
) -> None:
    ProfileStore(tmp_path).save("tiny", TINY)
    env = {"PONDER_HOME": str(tmp_path)}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(_campaign("tiny")))
    done = CliRunner().invoke(campaign, ["validate", str(path)], env=env)
    assert done.exit_code == 0, done.output
    path.write_text(json.dumps(_campaign("ghost")))
    done = CliRunner().invoke(campaign, ["validate", "--format", "json", str(path)], env=env)
    assert done.exit_code == 2
    errors = json.loads(done.output)["errors"]
    assert errors[0]["code"] == "variant.config" and "ghost" in errors[0]["message"]


def test_plan_validate_takes_a_saved_profile_and_refuses_unknown_and_secret(
    tmp_path: Path,
) -> None:
    store = ProfileStore(tmp_path)
    store.save("tiny", TINY)
    env = {"PONDER_HOME": str(tmp_path)}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_plan("tiny")))
    done = CliRunner().invoke(plan, ["validate", "--format", "json", str(path)], env=env)
    assert done.exit_code == 0, done.output
    # n=4, t=0, m=2: 4 generated + 4 judged + 4 final, far below quick's worst case.
    assert json.loads(done.output)["summary"]["reserved_calls"] < 20
    path.write_text(json.dumps(_plan("ghost")))
    done = CliRunner().invoke(plan, ["validate", str(path)], env=env)
    assert done.exit_code == 2 and "[tournament.profile]" in done.output
    leaky = tmp_path / "profiles/leaky.yaml"
    leaky.write_text("n: 4\nmodels:\n  token: hunter2\n")
    path.write_text(json.dumps(_plan("leaky")))
    done = CliRunner().invoke(plan, ["validate", str(path)], env=env)
    assert done.exit_code == 2 and "profile.secret" in done.output
    assert "hunter2" not in done.output


async def test_a_campaign_and_a_plan_run_with_the_saved_profiles_n(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    home = settings.home
    ProfileStore(home).save("tiny", TINY)
    env = cli_env(home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    path = home / "c.json"
    path.write_text(json.dumps(_campaign("tiny")))
    done = await ponder("campaign", "run", str(path), "--run-id", "camp-saved-1", env=env)
    assert done.code == 0, done.err
    assert _tiny_runs(settings) >= 1

    path = home / "p.json"
    path.write_text(json.dumps(_plan("tiny")))
    before = _tiny_runs(settings)
    done = await ponder("plan", "run", str(path), "--run-id", "plan-saved-1", env=env)
    assert done.code == 0, done.err
    assert _tiny_runs(settings) == before + 1  # the step's child ran with n=4


def _tiny_runs(settings: Settings) -> int:
    """Child tournaments whose recorded profile is the saved one's n and judge temperature."""
    summaries = [json.loads(p.read_text()) for p in settings.runs_dir.glob("*/summary.json")]
    return sum(
        1
        for s in summaries
        if s.get("profile", {}).get("n") == 4 and s["profile"].get("judge_temperature") == 0.1
    )
