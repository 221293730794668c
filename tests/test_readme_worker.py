"""The Operating page's worker command (``With TEMPORAL_ADDRESS set ...``) runs as written."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.readme_shell import activation, lines, readme_shell
from tests.test_readme import fenced, section

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py


@pytest.mark.timeout(120)
async def test_worker_command_runs_as_written(tmp_path: Path, server_address: str) -> None:
    (block,) = fenced(
        section(
            "With `TEMPORAL_ADDRESS` set, `ponder` is a plain client", page="docs/operating.md"
        ),
        "sh",
    )
    (command,) = lines(block)
    assert "TEMPORAL_ADDRESS" not in command.split("#")[0]  # the reader's export gives it
    async with readme_shell(tmp_path) as sh:
        # The prose's export: this session's dev server is "your cluster". The block runs as
        # pasted, after the README's activation line (so `python` is the venv's).
        sh.env["TEMPORAL_ADDRESS"] = server_address
        worker = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            f"{activation()}\nexec {command}",
            cwd=sh.work,
            env=sh.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            assert worker.stdout is not None
            banner = await asyncio.wait_for(worker.stdout.readline(), 60)
            assert b"polling 'ponder'" in banner, banner
            # A plain client on the same address and the default queue: the worker answers.
            out = await sh.run('ponder ask "What is durable execution?"')
            assert "[sim q=" in out
        finally:
            worker.send_signal(signal.SIGTERM)  # "SIGTERM shuts down gracefully"
            code = await asyncio.wait_for(worker.wait(), 30)
        assert code == 0
