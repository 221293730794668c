"""A reader that leaves early (``| head``, ``| grep -q``) is not a failure: ``ponder`` exits 0 and
says nothing, so a pipeline under ``set -o pipefail`` goes on; a command that fails still fails.
Click alone turned the closed pipe into a quiet exit 1 (the wait loops in docs/plans.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli import cli_env


def ponder_into_a_closed_pipe(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``ponder ARGS`` with stdout a pipe whose reader has already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "client", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=cli_env(home),
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


def test_help_and_a_store_read_exit_0_when_the_reader_left(tmp_path: Path) -> None:
    for args in (["--help"], ["think", "--help"], ["runs", "--json"]):
        done = ponder_into_a_closed_pipe(*args, home=tmp_path / "home")
        assert (done.returncode, done.stderr) == (0, ""), args


def test_a_rich_table_into_a_closed_pipe_exits_0(tmp_path: Path) -> None:
    done = ponder_into_a_closed_pipe(
        "think", "Sort a list", "--provider", "sim", "--dry-run", home=tmp_path / "home"
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_a_refusal_still_fails_when_the_reader_left(tmp_path: Path) -> None:
    done = ponder_into_a_closed_pipe("status", "bad/id", home=tmp_path / "home")
    assert done.returncode == 2
    assert "run.id_invalid" in done.stderr
