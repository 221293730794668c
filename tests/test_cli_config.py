"""One ``--config`` before or after the subcommand, and hints that run as printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from client.hints import ponder_program
from tests.cli import cli_env, ponder_here


@pytest.mark.parametrize(
    "args",
    [
        ("--config", "{bad}", "ask", "hi"),
        ("ask", "hi", "--config", "{bad}"),
        ("--config", "{bad}", "worker"),
        ("worker", "--config", "{bad}"),
    ],
)
def test_config_is_read_before_or_after_the_subcommand(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("providers = [")
    done = ponder_here(*(a.format(bad=bad) for a in args), env=cli_env(tmp_path))
    assert done.code == 2, done.err
    assert f"config file {bad} is not valid TOML" in done.err


def _fake_ponder(directory: Path) -> Path:
    directory.mkdir(parents=True)
    script = directory / "ponder"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_a_hint_names_ponder_when_path_finds_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _fake_ponder(tmp_path / "venv/bin")
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "argv", [str(script), "resume"])
    assert ponder_program() == "ponder"


def test_a_hint_names_the_path_ponder_was_run_by_when_path_does_not_find_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_ponder(tmp_path / "venv/bin")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr(sys, "argv", ["venv/bin/ponder", "resume"])
    assert ponder_program() == "venv/bin/ponder"  # what `ponder` alone would not find (127)
    other = _fake_ponder(tmp_path / "elsewhere")
    monkeypatch.setenv("PATH", f"{other.parent}{os.pathsep}/usr/bin")
    assert ponder_program() == "venv/bin/ponder"  # PATH finds another ponder: not this one
