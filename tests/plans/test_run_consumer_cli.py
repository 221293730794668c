"""``ponder step-done``, ``ponder checkpoint``, ``ponder revert`` and ``plan run --from`` as a user
runs them (subprocesses against a ``ponder worker`` process, like ``test_run_cli``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from tests.cli import ponder
from tests.plans.test_run_cli import env, home, worker_env  # noqa: F401 (the fixtures)

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

PLAN = """\
schema: ponder-plan/1
name: consumer-cli
contracts:
  Build: {name: string}
steps:
  - {id: build, kind: agent, prompt: Build the widget., dispatch: consumer, out: Build,
     checkpoint: built}
  - {id: ship, kind: gate, deps: [build], gate: {}}
  - {id: announce, kind: agent, prompt: "Announce ${steps.build.output.name}.",
     model: "sim:default", deps: [ship]}
"""


@pytest.mark.timeout(420)  # about 20 CLI processes: ~60 s on a quiet 2-core machine, 3x loaded
async def test_step_done_checkpoint_revert_and_from_through_the_cli(
    env: dict[str, str],  # noqa: F811
    home: Path,  # noqa: F811
    client: Client,
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    paused = await ponder("plan", "run", str(plan), "--run-id", "cli-consumer", env=env)
    assert paused.code == 75, paused.err
    found = re.search(
        r"continue with: ponder step-done cli-consumer build --token (\S+) ", paused.err
    )
    assert found, paused.err
    token = found.group(1)
    shown = await ponder("status", "cli-consumer", env=env)
    assert "awaiting_consumer (consumer-pending)" in shown.out
    assert f"consumer build token {token}" in shown.out

    stale = await ponder("step-done", "cli-consumer", "build", "--token", "0-old", "--output", "x",
                         env=env)  # fmt: skip
    assert stale.code == 2 and "stale-dispatch-token" in stale.err
    both = await ponder("step-done", "cli-consumer", "build", "--output", "x", "--failure", "y",
                        env=env)  # fmt: skip
    assert both.code == 2 and "invalid-result" in both.err

    answer = tmp_path / "answer.json"
    answer.write_text('{"name": "widget"}\n')
    args = ("step-done", "cli-consumer", "build", "--token", token, "--output", f"@{answer}")
    gate = await ponder(*args, "--usage", "tokens=50,wall_ms=1200", env=env)
    assert gate.code == 75, gate.err
    assert "continue with: ponder gate approve cli-consumer ship  (or: revise, kill)" in gate.err
    # The same command again: its update id (a digest of the answer) is answered once.
    again = await ponder(*args, env=env)
    assert again.code == 75, again.err
    handle = client.get_workflow_handle("cli-consumer")
    history = await handle.fetch_history()
    accepted = [
        e
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert len(accepted) == 1

    committed = await ponder("checkpoint", "cli-consumer", "at-gate", env=env)
    assert committed.code == 0, committed.err
    assert "labels built, at-gate" in committed.err
    bad = await ponder("revert", "cli-consumer", "no such label", env=env)
    assert bad.code == 2 and "invalid-label" in bad.err
    missing = await ponder("revert", "cli-consumer", "never", env=env)
    assert missing.code == 2 and "checkpoint-not-found" in missing.err and "built" in missing.err
    # Back to after build: the gate opens again with a new token.
    reverted = await ponder("revert", "cli-consumer", "built", env=env)
    assert reverted.code == 75, reverted.err
    assert "ponder gate approve cli-consumer ship  (or: revise, kill)" in reverted.err

    killed = await ponder("gate", "kill", "cli-consumer", "ship", env=env)
    assert killed.code == 1 and "gate-killed" in killed.err
    assert (home / "runs" / "cli-consumer" / "checkpoints.json").exists()

    resumed = await ponder("plan", "run", str(plan), "--from", "cli-consumer:built",
                           "--run-id", "cli-consumer-2", env=env)  # fmt: skip
    assert resumed.code == 75, resumed.err  # build was restored: straight to the gate
    assert "ponder gate approve cli-consumer-2 ship  (or: revise, kill)" in resumed.err
    shown = await ponder("status", "cli-consumer-2", env=env)
    assert "resumed  build" in shown.out
    done = await ponder("gate", "approve", "cli-consumer-2", "ship", env=env)
    assert done.code == 0, done.err
    assert "Announce widget." in done.out

    # Refused before a run opens: this run store shows the labels, so no run and no record.
    unknown = await ponder("plan", "run", str(plan), "--from", "cli-consumer:nope",
                           "--run-id", "cli-consumer-nope", env=env)  # fmt: skip
    assert unknown.code == 2 and "ponder: checkpoint-not-found: " in unknown.err, unknown.err
    assert "labels in commit order: built, at-gate" in unknown.err
    assert not (home / "runs" / "cli-consumer-nope").exists()
    with pytest.raises(RPCError):
        await client.get_workflow_handle("cli-consumer-nope").describe()
    malformed = await ponder("plan", "run", str(plan), "--from", "cli-consumer", env=env)
    assert malformed.code == 2 and "RUN:LABEL" in malformed.err
