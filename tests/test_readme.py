"""The documentation's recipes run as written: each fenced block is taken from the text of the
page that shows it (README.md, or a page under docs/)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.cli import cli_env
from tests.test_worker_cli import processes_using

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

OPERATING = "docs/operating.md"

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """Every page whose recipes the suite runs: the README, then the docs site's pages."""
    return [README, *sorted(DOCS.glob("*.md"))]


def section(title: str, page: str = "README.md") -> str:
    """The text of ``page`` (a path from the repository root) under ``title`` (a heading, or the
    start of a paragraph) up to the next heading of any level."""
    text = (ROOT / page).read_text()
    start = text.index(title)
    # A heading is a ``#`` line outside a fenced block (a shell comment inside one is not).
    rest = text[start:].splitlines(keepends=True)
    end, fence = start + len(rest[0]), False
    for line in rest[1:]:
        if line.startswith("```"):
            fence = not fence
        elif line.startswith("#") and not fence:
            return text[start:end]
        end += len(line)
    return text[start:]


def fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.DOTALL)


async def run_bash(script: str, home: Path, timeout: float) -> tuple[int, str]:
    venv_bin = str(Path(sys.executable).parent)
    # The venv's bin first, as the README's activation line puts it; PYTHONPATH: this checkout.
    env = cli_env(home, PATH=f"{venv_bin}:{os.environ['PATH']}", PYTHONPATH=str(README.parent))
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        script,
        cwd=home,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout)
    finally:
        for pid in processes_using(home):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert process.returncode is not None
    return process.returncode, out.decode()


@pytest.mark.timeout(240)
async def test_temporal_cli_recipes_run_as_written(tmp_path: Path) -> None:
    text = section("## Driving workflows with the `temporal` CLI", page=OPERATING)
    blocks = fenced(text, "sh")
    assert len(blocks) == 4, "setup, Ask, Tournament, Campaign"
    # The page's own stop line ends the script: worker, then server.
    stop = re.search(r"`(kill %2 %1)`", text)
    assert stop, "the page says how to stop the worker and the server"
    script = "set -euo pipefail\n" + "\n".join(blocks) + f"\n{stop.group(1)}\nwait\n"
    home = tmp_path / "home"
    home.mkdir()
    (home / "examples").symlink_to(README.parent / "examples")  # as a fresh clone has it
    code, out = await run_bash(script, home, timeout=200)
    assert code == 0, out[-4000:]
    assert "[sim q=" in out  # the Ask's result
    assert '"recommendedVariant"' in out or '"recommended_variant"' in out  # the Campaign's
    assert (home / "runs" / "camp-cli" / "report.html").is_file()
    assert '"phase"' in out or "phase" in out  # the progress query
    assert not (home / "server.json").exists(), "the server stops with its last lease"


@pytest.mark.timeout(180)
async def test_python_client_snippet_runs_as_written(tmp_path: Path) -> None:
    (snippet,) = fenced(section("## Python client", page=OPERATING), "python")
    home = tmp_path / "home"
    home.mkdir()
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    root = README.parent
    code, out = await run_bash(f"PYTHONPATH={root} {sys.executable} {script}", home, timeout=150)
    assert code == 0, out[-4000:]
    assert "[sim q=" in out
    assert ("winner" in out and "run_completed" in out) or "winner" in out
    # Nothing of the run goes on: cancelled; the hand-over worker (if any) was killed above.
    assert "Fatal Python error" not in out
