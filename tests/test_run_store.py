"""The run store: writes stay inside the runs directory, carry no keys, and never block the loop."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from activities.config import known_secrets, load_settings
from activities.run_store import (
    RunDirRefused,
    RunFileActivities,
    RunIdInvalid,
    RunStore,
    WriteRunFilesInput,
)
from workflows.run_ids import RUN_ID_INVALID, check_run_id, run_id_problem


@pytest.mark.parametrize(
    "run_id", ["../../etc", "a/b", "", ".x", "-x", "x" * 129, "é", "abc\n", "x" * 128 + "\n"]
)
def test_run_id_validator_refuses_with_its_code(run_id: str) -> None:
    problem = run_id_problem(run_id)
    assert problem is not None
    assert "[A-Za-z0-9][A-Za-z0-9._-]*" in problem
    with pytest.raises(RunIdInvalid) as info:
        check_run_id(run_id)
    assert info.value.code == RUN_ID_INVALID


@pytest.mark.parametrize("run_id", ["a", "t-1f3.x_y", "x" * 128])
def test_run_id_validator_accepts_good_ids(run_id: str) -> None:
    assert run_id_problem(run_id) is None
    assert check_run_id(run_id) == run_id


def test_a_symlinked_run_dir_is_refused(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    (tmp_path / "runs").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "runs" / "r1").symlink_to(outside)
    with pytest.raises(RunDirRefused, match="symlink"):
        store.write("r1", "summary.json", "{}")
    assert list(outside.iterdir()) == []
    # A runs directory that is itself a link (the user's choice) is fine.
    (tmp_path / "linked-runs").symlink_to(tmp_path / "runs")
    assert RunStore(tmp_path / "linked-runs").write("r2", "f.txt", "x").read_text() == "x"


def test_the_writer_redacts_configured_keys(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", secrets=["sk-abc123", ""])
    path = store.write("r1", "config.json", '{"task": "use sk-abc123 please"}')
    assert path.read_text() == '{"task": "use [redacted] please"}'


class SlowStore(RunStore):
    def write(self, run_id: str, relative: str, content: str | bytes) -> Path:
        time.sleep(0.5)  # a slow disk
        return super().write(run_id, relative, content)


async def test_run_file_writes_do_not_block_the_event_loop(tmp_path: Path) -> None:
    files = RunFileActivities(SlowStore(tmp_path / "runs"))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    task = asyncio.create_task(ticker())
    try:
        await files.write_run_files(WriteRunFilesInput(run_id="r1", files={"a.txt": "a"}))
    finally:
        task.cancel()
    assert ticks >= 5  # the loop (and its heartbeats) kept running during the 0.5 s write
    assert (tmp_path / "runs" / "r1" / "a.txt").read_text() == "a"


def test_known_secrets_cover_every_endpoint_key_and_the_cluster_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-1")
    monkeypatch.setenv("TEMPORAL_API_KEY", "tmprl-2")
    monkeypatch.setenv("MY_LOCAL_KEY", "local-3")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = tmp_path / "ponder.toml"
    config.write_text(
        '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
        'api_key_env = "MY_LOCAL_KEY"\n'
    )
    settings = load_settings(config, home=str(tmp_path / "h"))
    assert sorted(known_secrets(settings)) == ["local-3", "sk-openai-1", "tmprl-2"]
