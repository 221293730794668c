"""``ponder plan run`` stopped at a gate with a deadline (exit 75), embedded: the deadline still
decides with no command of the user's running, because the run is left to the home's background
worker (``client.plan_follow``). Before, it waited until some later command ran a worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import cli_env, ponder
from tests.test_embedded import wait_until
from tests.test_process import background_workers, stop_background_workers

pytestmark = [pytest.mark.usefixtures("no_leftover_processes"), pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plans" / "gate-deadline.yaml"


def outcome(home: Path, run_id: str) -> str | None:
    try:
        return str(json.loads((home / "runs" / run_id / "cost.json").read_text())["outcome"])
    except (OSError, ValueError, KeyError):
        return None


async def test_a_gate_deadline_decides_after_the_command_exits(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = cli_env(home)
    run = ("plan", "run", str(EXAMPLE), "--arg", "version=1.2", "--run-id", "ex-deadline")
    paused = await ponder(*run, env=env)
    assert paused.code == 75, paused.err
    assert outcome(home, "ex-deadline") == "awaiting_gate"
    assert background_workers(home), "nobody serves the gate's timers"
    # The example's gate approves by default at 5 s; nothing of ours runs in the meantime.
    await wait_until(lambda: outcome(home, "ex-deadline") == "completed", 90)
    shown = await ponder("status", "ex-deadline", "--json", env=env)
    assert shown.code == 0, shown.err
    await stop_background_workers(home)


async def test_a_wait_only_a_person_ends_leaves_no_worker_behind(tmp_path: Path) -> None:
    """A wait only a person ends keeps nothing running: an idle background worker would stay as
    long as the run waits."""
    home = tmp_path / "home"
    env = cli_env(home)
    release = EXAMPLE.parent / "release.yaml"
    run = ("plan", "run", str(release), "--arg", "version=1.2", "--run-id", "rel-nodeadline")
    paused = await ponder(*run, env=env)
    assert paused.code == 75, paused.err
    assert background_workers(home) == []
