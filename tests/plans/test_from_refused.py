"""``ponder plan run --from RUN:LABEL`` refused before a run opens when this machine's run store
shows the run or the label is missing (``checkpoint-not-found``, exit 2): no server is started
and no run record is made. What the store cannot decide is left to the workflow's own check
(``test_run_checkpoints``, ``test_run_consumer_cli``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from activities.errors import ConfigError
from client.plan_input import check_source_checkpoint
from tests.cli import cli_env, ponder_here
from workflows.plan.checkpoints import CHECKPOINTS_SCHEMA, MAX_CHECKPOINTS_FILE_BYTES
from workflows.plan.run_types import FromCheckpoint

PLAN = """\
schema: ponder-plan/1
name: from-refused
steps:
  - {id: draft, kind: agent, prompt: Draft., model: "sim:default", checkpoint: drafted}
"""


def _source(runs: Path, run_id: str, labels: list[str]) -> Path:
    """A source run as the worker leaves it: its directory and ``checkpoints.json``."""
    run = runs / run_id
    run.mkdir(parents=True)
    doc = {
        "schema": CHECKPOINTS_SCHEMA,
        "plan": "from-refused",
        "outputs": {},
        "checkpoints": [{"label": label, "steps": {}, "args": {}} for label in labels],
    }
    (run / "checkpoints.json").write_text(json.dumps(doc))
    return run


def test_a_missing_run_or_label_is_refused_before_any_server_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runs = home / "runs"
    _source(runs, "plan-src", ["drafted", "reviewed"])
    (runs / "plan-bare").mkdir()
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    env = cli_env(home)
    cases = (
        ("plan-src:never", "labels in commit order: drafted, reviewed"),
        ("plan-none-such:drafted", "run plan-none-such is not in the run store"),
        ("plan-bare:drafted", "run plan-bare has no checkpoints"),
    )
    for source, why in cases:
        refused = ponder_here("plan", "run", str(plan), "--from", source, "--run-id", "plan-new",
                              env=env)  # fmt: skip
        assert refused.code == 2, refused.err
        assert "ponder: checkpoint-not-found: " in refused.err and why in refused.err, refused.err
        assert f"--from {source}" in refused.err
    # No run opened: no record of it, and no embedded server was started for it.
    assert sorted(p.name for p in runs.iterdir()) == ["plan-bare", "plan-src"]
    assert not (home / "server.json").exists() and not (home / "server.lock").exists()
    bad = ponder_here("plan", "run", str(plan), "--from", "plan-src:no spaces", env=env)
    assert bad.code == 2 and "ponder: invalid-label: " in bad.err, bad.err


def test_a_committed_label_passes_and_what_the_store_cannot_tell_is_left_to_the_worker(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    source = _source(runs, "plan-src", ["drafted"])
    check_source_checkpoint(runs, FromCheckpoint(run_id="plan-src", label="drafted"), embedded=True)
    # On a cluster the run may live in the worker's own store.
    absent = FromCheckpoint(run_id="plan-elsewhere", label="drafted")
    check_source_checkpoint(runs, absent, embedded=False)
    with pytest.raises(ConfigError) as refused:
        check_source_checkpoint(runs, absent, embedded=True)
    assert refused.value.code == "checkpoint-not-found"
    # Still refused on a cluster when this store holds the run and lacks the label.
    with pytest.raises(ConfigError):
        check_source_checkpoint(
            runs, FromCheckpoint(run_id="plan-src", label="never"), embedded=False
        )
    # A linked run directory, a linked, oversized or malformed file: the worker's refusal.
    (runs / "plan-link").symlink_to(source)
    check_source_checkpoint(runs, FromCheckpoint(run_id="plan-link", label="x"), embedded=True)
    linked = runs / "plan-linked-file"
    linked.mkdir()
    (linked / "checkpoints.json").symlink_to(source / "checkpoints.json")
    check_source_checkpoint(
        runs, FromCheckpoint(run_id="plan-linked-file", label="x"), embedded=True
    )
    big = runs / "plan-big"
    big.mkdir()
    (big / "checkpoints.json").write_bytes(b" " * (MAX_CHECKPOINTS_FILE_BYTES + 1))
    check_source_checkpoint(runs, FromCheckpoint(run_id="plan-big", label="x"), embedded=True)
    fifo = runs / "plan-fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "checkpoints.json")  # never waited on
    check_source_checkpoint(runs, FromCheckpoint(run_id="plan-fifo", label="x"), embedded=True)
    (source / "checkpoints.json").write_text("{not json")
    check_source_checkpoint(runs, FromCheckpoint(run_id="plan-src", label="x"), embedded=True)
