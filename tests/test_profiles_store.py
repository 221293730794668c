"""Saved profiles: save, show, use with ``--profile``, delete; secrets refused at any depth."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml

from activities.config import Settings
from activities.errors import ConfigError
from client.profiles import ProfileStore, SavedProfile, apply_profile
from tests.cli import cli_env, ponder, ponder_here

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]


SAVE_SMALL_SIM = (
    *("profile", "save", "small-sim", "--description", "six candidates on the simulator"),
    *("--n", "6", "--k", "2", "--t", "1", "--m", "2", "--provider", "sim"),
    *("--prompt-style", "paper-programming", "--max-calls", "40"),
    *("--concurrency", "judge=3", "--temperature", "judge=0.1"),
)


def test_save_show_list_and_delete(tmp_path: Path) -> None:
    """None of these commands connects (a dry run included), so they run in this process
    (``ponder_here``): a ``ponder`` process each cost most of a second of CPU."""
    env = cli_env(tmp_path)
    saved = ponder_here(*SAVE_SMALL_SIM, env=env)
    assert saved.code == 0, saved.err
    path = tmp_path / "profiles/small-sim.yaml"
    assert saved.out.strip() == str(path)
    on_disk = yaml.safe_load(path.read_text())
    assert on_disk["n"] == 6 and on_disk["limits"] == {"max_calls": 40}

    listed = ponder_here("profile", "list", "--json", env=env)
    rows = {r["name"]: r for r in json.loads(listed.out)}
    assert rows["small-sim"]["kind"] == "saved"
    assert rows["quick"]["kind"] == "built-in"
    shown = ponder_here("profile", "show", "small-sim", "--json", env=env)
    assert json.loads(shown.out)["prompt_style"] == "paper-programming"
    over = ponder_here(
        "think", "x", "--profile", "small-sim", "--max-calls", "10", "--dry-run", env=env
    )
    assert over.code == 2 and "budget.planned_calls_exceeded" in over.err

    deleted = ponder_here("profile", "delete", "small-sim", env=env)
    assert deleted.code == 0 and not path.exists()
    gone = ponder_here("think", "x", "--profile", "small-sim", "--dry-run", env=env)
    assert gone.code == 2 and "profile.not_found" in gone.err


async def test_a_saved_profile_is_used_by_think(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    # The CLI as real processes, plain clients of the session's server; this test's worker runs
    # the tournament.
    tmp_path = settings.home
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    run_id = f"p1-{uuid.uuid4().hex[:8]}"
    saved = await ponder(*SAVE_SMALL_SIM, env=env)
    assert saved.code == 0, saved.err
    assert saved.out.strip() == str(tmp_path / "profiles/small-sim.yaml")

    # Used: the tournament runs with the saved n, k, t, m; a flag still beats the profile.
    run = await ponder(
        "think", "Sort a list", "--profile", "small-sim", "--seed", "2", "--run-id", run_id, env=env
    )
    assert run.code == 0, run.err
    summary = json.loads((tmp_path / f"runs/{run_id}/summary.json").read_text())
    assert (summary["profile"]["n"], summary["profile"]["k"]) == (6, 2)
    assert summary["profile"]["judge_temperature"] == 0.1
    # 6 generated + 6 judged + 4 mutants + 6 final = 22 calls, on the simulator.
    assert summary["calls"]["used"] == 22 and summary["simulated"] is True
    config = json.loads((tmp_path / f"runs/{run_id}/config.json").read_text())
    assert config["prompt_style"] == "paper-programming"
    assert config["budget"]["max_calls"] == 40
    assert config["concurrency"]["judge"] == 3


def test_a_secret_at_depth_three_is_refused_on_save(tmp_path: Path) -> None:
    source = tmp_path / "draft.yaml"
    source.write_text(
        yaml.safe_dump({"n": 4, "limits": {"extra": {"api_key": "sk-live-do-not-store"}}})
    )
    done = ponder_here("profile", "save", "leaky", "--from", str(source), env=cli_env(tmp_path))
    assert done.code == 2
    assert "profile.secret" in done.err and "limits.extra.api_key" in done.err
    assert "sk-live-do-not-store" not in done.err + done.out
    assert not (tmp_path / "profiles/leaky.yaml").exists()


def test_a_hand_edited_secret_is_refused_on_load(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save("fine", SavedProfile(n=4, k=2, t=0, m=2))
    path = tmp_path / "profiles/fine.yaml"
    path.write_text(path.read_text() + "models:\n  judge: sim:default\n  token: hunter2\n")
    with pytest.raises(ConfigError, match=r"profile\.secret.*models\.token"):
        store.load("fine")
    done = ponder_here(
        "think", "x", "--profile", "fine", "--provider", "sim", "--dry-run", env=cli_env(tmp_path)
    )
    assert done.code == 2
    assert "profile.secret" in done.err and "hunter2" not in done.err
    # Budget keys that only end in "tokens" are not secrets.
    store.save("budget", SavedProfile.model_validate({"limits": {"max_input_tokens": 5}}))
    assert store.load("budget").limits.max_input_tokens == 5


def test_names_are_words_and_flags_win(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    for bad in ("../etc", "a/b", ".hidden", "quick"):
        with pytest.raises(ConfigError, match=r"profile\.invalid"):
            store.path(bad)
    store.save("mine", SavedProfile(n=6, k=2, t=1, m=2, provider="sim"))
    options = {"profile": "mine", "n": 8, "k": None, "provider": None}
    merged, name = apply_profile(options, {"profile", "n"}, tmp_path)
    assert name == "mine"
    assert merged["profile"] == "quick"
    assert (merged["n"], merged["k"], merged["provider"]) == (8, 2, "sim")
    # A model per role, limits and concurrency reach think's own options.
    roles = SavedProfile.model_validate(
        {
            "base": "balanced",
            "models": {
                "generate": "sim:a",
                "judge": "sim:j",
                "mutate": "sim:m",
                "finalize": "sim:f",
            },
            "limits": {"max_usd": 2.5, "max_output_tokens": 900},
            "concurrency": {"judge": 2},
        }
    )
    store.save("roles", roles)
    merged, _ = apply_profile(
        {"profile": "roles", "judge_model": "sim:x"}, {"judge_model"}, tmp_path
    )
    assert merged["profile"] == "balanced" and merged["model"] == "sim:a"
    assert merged["judge_model"] == "sim:x"  # given: the flag wins
    assert (merged["mutator_model"], merged["finalizer_model"]) == ("sim:m", "sim:f")
    assert merged["max_usd"] == 2.5 and merged["max_output_tokens"] == ("900",)
    assert "judge=2" in merged["concurrency"]


def test_a_saved_profile_carries_judge_orders_and_a_panel(tmp_path: Path) -> None:
    # judge_orders and a judge panel are profile settings too; flags still win.
    store = ProfileStore(tmp_path)
    panel = ["sim:default,accuracy=0.95", "sim:default,position_bias=0.5"]
    store.save("trusted", SavedProfile.model_validate({"judge_orders": "both", "judges": panel}))
    merged, _ = apply_profile({"profile": "trusted"}, {"profile"}, tmp_path)
    assert merged["judge_orders"] == "both" and merged["judges"] == tuple(panel)
    merged, _ = apply_profile(
        {"profile": "trusted", "judge_orders": "one"}, {"profile", "judge_orders"}, tmp_path
    )
    assert merged["judge_orders"] == "one"
    with pytest.raises(ValueError, match="judges"):
        SavedProfile.model_validate({"judges": ["sim:default"]})  # a panel is two or more
