"""Run README lines as written: bash in a work directory that looks like a fresh clone.

The work directory has ``.venv`` and ``examples`` linked from the repository, and every command
runs after the README's own activation line (its first block), so ``ponder`` is what that
activated shell finds and ``examples/...`` resolves as in a clone. The README's lines run with no
substitution: the files they name ship in ``examples/`` or are written by an earlier line, and
run ids are the ones the lines choose. One embedded server is held for the whole file
(``one_server``), so the commands share it instead of each starting its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from client.embedded import EmbeddedServer
from tests.cli import cli_env, one_server
from tests.test_process import background_workers
from tests.test_worker_cli import processes_using

ROOT = Path(__file__).resolve().parent.parent


def lines(block: str) -> list[str]:
    """The commands of a block: comment-only lines dropped, ``\\`` continuations joined."""
    joined = block.replace("\\\n", " ")
    return [
        line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def activation() -> str:
    """The README's activation line (its first block): every later recipe runs after it."""
    from tests.test_readme import fenced, section

    (block,) = fenced(section("# ponder"), "sh")
    (line,) = [line for line in lines(block) if "activate" in line]
    return line.split("#")[0].strip()


@dataclass
class Ran:
    code: int
    out: str


@dataclass
class Shell:
    work: Path
    home: Path
    env: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    async def run(self, command: str, expect: int | None = 0, timeout: float = 150) -> str:
        """Run ``command`` with bash in the work directory; assert its exit code."""
        began = time.monotonic()
        print(f"$ {command}", flush=True)  # shown with a timeout's report: which line hung
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            f"{activation()}\n{command}",
            cwd=self.work,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(), timeout)
        assert process.returncode is not None
        text = out.decode()
        took = time.monotonic() - began
        self.log.append(f"$ {command}\n(exit {process.returncode}, {took:.1f} s)\n{text[-1500:]}")
        if expect is not None:
            assert process.returncode == expect, "\n".join(self.log)[-6000:]
        return text

    async def start(self, command: str) -> asyncio.subprocess.Process:
        """Start ``command`` in the background, after the activation line (``ponder worker &``)."""
        return await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            f"{activation()}\nexec {command}",
            cwd=self.work,
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )

    def write(self, name: str, text: str) -> Path:
        path = self.work / name
        path.write_text(text)
        return path


@asynccontextmanager
async def readme_shell(tmp_path: Path, **extra_env: str) -> AsyncIterator[Shell]:
    work = tmp_path / "work"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (work / "examples").symlink_to(ROOT / "examples")
    # PYTHONPATH: the checkout under test, whichever checkout the venv was installed from.
    env = cli_env(home, PYTHONPATH=str(ROOT), **extra_env)
    started = time.time()
    try:
        async with one_server(home):
            yield Shell(work, home, env)
    finally:
        for pid in processes_using(home):  # a background worker the recipes left
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    left = left_in_root(work, started)
    assert not left, f"recipes wrote {left} in the repository, not in their scratch directory"


def left_in_root(work: Path, since: float) -> list[str]:
    """The files the recipes wrote in ``work`` (``local.toml``, ``run.md``, ``control.py``) that
    also appeared in, or changed in, the repository root since ``since``: none should."""
    left = []
    for entry in work.iterdir():
        there = ROOT / entry.name
        if entry.name in (".venv", "examples") or not there.exists():
            continue
        if there.stat().st_mtime >= since:
            left.append(entry.name)
    return sorted(left)


RUN_ID = re.compile(r"\b((?:think|ask|plan|camp|campaign|rank|mutate)-[0-9a-z-]+)\b")


def run_id(out: str) -> str:
    """The last run id a command printed."""
    found = RUN_ID.findall(out)
    assert found, out[-2000:]
    return str(found[-1])


@contextlib.contextmanager
def stopped(pids: list[int]) -> Iterator[None]:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


async def cancel_while_its_worker_waits(sh: Shell, run_id: str, cancel: str) -> None:
    """Run a recipe's ``cancel`` line (exit 1) while the run still has work left: the home's
    background worker is stopped from before the cancel is sent until the request is in
    history, so the run cannot end first (seen: a sim campaign completed during ``extend`` on a
    quiet machine; a detached tournament of 3 s calls completed before ``cancel`` at load 18)."""
    workers = background_workers(sh.home)
    assert workers, f"{run_id}'s background worker is not running"
    async with EmbeddedServer(sh.home).lease() as info:
        handle = (await Client.connect(info.address)).get_workflow_handle(run_id)
        with stopped(workers):
            process = await sh.start(cancel)
            deadline = asyncio.get_running_loop().time() + 120
            while True:
                kinds = [e.event_type async for e in handle.fetch_history_events()]
                if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in kinds:
                    break
                assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED not in kinds
                assert asyncio.get_running_loop().time() < deadline, "no cancel was requested"
                await asyncio.sleep(0.1)
        assert await asyncio.wait_for(process.wait(), 150) == 1  # the recipe's "exit 1"
