"""``ponder think`` and friends as a user drives them, on the embedded default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import cli_env, ponder

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


async def test_dry_run_prints_the_plan_without_a_server(tmp_path: Path) -> None:
    done = await ponder(
        "think", "Sort a list", "--profile", "paper", "--dry-run", env=cli_env(tmp_path)
    )
    assert done.code == 0, done.err
    assert "calls: 285" in done.out
    assert "sequential rounds: 8" in done.out
    assert "warning" in done.out
    assert not (tmp_path / "server.json").exists()


async def test_dry_run_estimates_usd_from_the_price_table(tmp_path: Path) -> None:
    (tmp_path / "ponder.toml").write_text(
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[providers.local.prices."m-1"]\ninput = 1.0\noutput = 2.0\n'
    )
    done = await ponder(
        "think",
        "x",
        "--profile",
        "paper",
        "--model",
        "local:m-1",
        "--dry-run",
        env=cli_env(tmp_path),
    )
    assert done.code == 0, done.err
    assert "estimated USD: 1.14" in done.out  # 285 x (2k x $1 + 1k x $2) / 1M
    unpriced = await ponder(
        "think", "x", "--model", "local:other", "--max-usd", "3", "--dry-run", env=cli_env(tmp_path)
    )
    assert unpriced.code == 2 and "budget.unpriced_model" in unpriced.err


async def test_think_on_the_sim_prints_winner_true_quality_and_report(tmp_path: Path) -> None:
    done = await ponder(
        "think",
        "Sort a list",
        "--profile",
        "quick",
        "--provider",
        "sim",
        "--seed",
        "3",
        "--run-id",
        "cli-think",
        env=cli_env(tmp_path),
    )
    assert done.code == 0, done.err
    summary = json.loads((tmp_path / "runs/cli-think/summary.json").read_text())
    assert f"winner: {summary['winner_id']} after 15 calls" in done.err
    assert "simulated: winner true quality" in done.err
    assert "report.html" in done.err
    assert "[sim q=" in done.out
    shown = await ponder("status", "cli-think", env=cli_env(tmp_path))
    assert shown.code == 0, shown.err
    assert "completed" in shown.out and summary["winner_id"] in shown.out
    as_json = await ponder("status", "cli-think", "--json", env=cli_env(tmp_path))
    progress = json.loads(as_json.out)
    assert progress["spent"]["calls"] == 15
    assert progress["leaderboard"][0]["candidate_id"] == summary["winner_id"]
    report = await ponder("report", "cli-think", env=cli_env(tmp_path))
    assert report.code == 0 and report.out.strip().endswith("report.html")


async def test_pause_exits_75_and_extend_finishes_the_same_run(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    paused = await ponder(
        "think",
        "Sort a list",
        "--profile",
        "balanced",
        "--seed",
        "4",
        "--model",
        "sim:default,invalid_json_rate=0.25",
        "--invalid-json-retries",
        "3",
        "--max-calls",
        "60",
        "--run-id",
        "tight",
        env=env,
    )
    assert paused.code == 75, paused.err
    assert "ponder extend tight" in paused.err
    below = await ponder("extend", "tight", "--calls", "10", env=env)
    assert below.code == 2
    assert "below what is already spent" in below.err
    paused_status = await ponder("status", "tight", env=env)
    assert "continue with: ponder extend tight --calls +" in paused_status.out
    resumed = await ponder("extend", "tight", "--calls", "+100", "--detach", env=env)
    assert resumed.code == 0, resumed.err
    from tests.test_worker_cli import wait_until

    summary_path = tmp_path / "runs/tight/summary.json"

    def completed() -> bool:
        return json.loads(summary_path.read_text()).get("status") == "completed"

    await wait_until(completed, 90)  # a background worker finished it
    summary = json.loads(summary_path.read_text())
    assert summary["calls"]["used"] > 60


async def test_refusals_are_one_line_exit_2(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    done = await ponder("think", "x", "--max-calls", "14", env=env)
    assert done.code == 2
    assert "budget.planned_calls_exceeded" in done.err
    done = await ponder("think", "x", "--n", "3", "--k", "1", env=env)
    assert done.code == 2 and "profile.invalid" in done.err
    done = await ponder("think", "@missing.md", env=env)
    assert done.code == 2 and "cannot be read" in done.err


async def test_rank_orders_given_candidates(tmp_path: Path) -> None:
    files = []
    for name, q in (("weak", -1.5), ("strong", 2.5), ("middling", 0.2)):
        path = tmp_path / f"{name}.txt"
        path.write_text(f"answer {name}\n[sim q={q} id={name}]")
        files.append(str(path))
    done = await ponder(
        "rank",
        *files,
        "--task",
        "Which is best?",
        "--seed",
        "1",
        "--model",
        "sim:default,accuracy=0.99",
        env=cli_env(tmp_path),
    )
    assert done.code == 0, done.err
    ranked = [line.split()[1] for line in done.out.splitlines() if line.strip()]
    assert ranked[0] == "strong"
    duplicate = await ponder("rank", files[0], files[0], "--task", "x", env=cli_env(tmp_path))
    assert duplicate.code == 2 and "unique" in duplicate.err


async def test_ctrl_c_detaches_and_the_run_goes_on(tmp_path: Path) -> None:
    import asyncio
    import contextlib
    import os
    import signal

    from tests.cli import finish, start_ponder
    from tests.test_worker_cli import processes_using, wait_until

    env = cli_env(tmp_path)
    try:
        process = await start_ponder(
            "think",
            "Sort a list",
            "--profile",
            "balanced",
            "--run-id",
            "interrupted",
            "--model",
            "sim:default,latency=fixed:150",
            env=env,
        )
        usage = tmp_path / "runs/interrupted/usage.jsonl"
        await wait_until(usage.exists, 60)  # the first phase has been committed
        process.send_signal(signal.SIGINT)
        done = await finish(process)
        assert done.code == 0, done.err
        assert "ponder watch interrupted" in done.err
        summary = tmp_path / "runs/interrupted/summary.json"

        def completed() -> bool:
            return json.loads(summary.read_text()).get("status") == "completed"

        await wait_until(completed, 90)
    finally:
        for pid in processes_using(tmp_path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0)


async def test_unknown_run_id_is_one_line_exit_2(tmp_path: Path) -> None:
    for command in ("status", "watch", "extend", "cancel"):
        done = await ponder(command, "no-such-run", env=cli_env(tmp_path))
        assert done.code == 2, (command, done.err)
        assert "not found" in done.err and "Traceback" not in done.err
