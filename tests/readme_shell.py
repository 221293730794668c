"""Run README lines as written: bash in a work directory that looks like a checkout.

The work directory has ``.venv`` and ``examples`` linked from the repository, so the README's
``.venv/bin/ponder`` and ``examples/...`` paths resolve, and the test writes the files a recipe
names (``task.md``, ``a.md``, ...) there. One embedded server is held for the whole test
(``one_server``), so the commands share it instead of each starting its own.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli import cli_env, one_server

ROOT = Path(__file__).resolve().parent.parent


def lines(block: str) -> list[str]:
    """The commands of a block: comment-only lines dropped, ``\\`` continuations joined."""
    joined = block.replace("\\\n", " ")
    return [
        line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def alternatives(line: str) -> list[str]:
    """``ponder status ID | watch ID  # comment`` -> ``ponder status ID``, ``ponder watch ID``.

    The README writes a verb's alternatives as one line; each becomes its own command, with the
    first one's program (``.venv/bin/ponder`` or ``ponder``)."""
    command = line.split("  #")[0].strip()
    first, *rest = [part.strip() for part in command.split(" | ")]
    program = re.match(r"(\S*ponder) ", first)
    assert program, line
    given = program.group(1)
    return [first] + [part if part.startswith(given) else f"{given} {part}" for part in rest]


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
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
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
    venv_bin = str(Path(sys.executable).parent)
    env = cli_env(home, PATH=f"{venv_bin}:{os.environ['PATH']}", **extra_env)
    async with one_server(home):
        yield Shell(work, home, env)


RUN_ID = re.compile(r"\b((?:think|ask|plan|camp|campaign|rank|mutate)-[0-9a-z-]+)\b")


def run_id(out: str) -> str:
    """The last run id a command printed."""
    found = RUN_ID.findall(out)
    assert found, out[-2000:]
    return str(found[-1])
