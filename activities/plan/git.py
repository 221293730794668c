"""Running git for worktree-isolated fan-out: one helper, one environment, bounded.

Every git command a plan run causes goes through :func:`git`:

- ``git -C DIR`` (never a shell), hooks off (``core.hooksPath=/dev/null``) and no fsmonitor
  daemon, so nothing in a repository's configuration runs a program on ponder's behalf;
- an explicit environment, never the worker's: ``PATH`` (to find git), ``HOME`` a directory
  that does not exist, ``GIT_CONFIG_NOSYSTEM=1`` and ``GIT_CONFIG_GLOBAL=/dev/null`` (no system
  or user configuration), no inherited ``GIT_*`` variable, a fixed author and committer with a
  fixed date (so a commit of the same tree and parent is the same commit every time);
- a wall-clock timeout (``GIT_TIMEOUT_S``): the command runs in its own session and its whole
  process group is killed when the time is up;
- bounded output: at most ``limit`` bytes of stdout are kept (or streamed to a file, which stops
  the command once it passes the limit) and the first 2,000 characters of stderr.

Blocking: call it from a thread (the activities run their git work through ``in_thread``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import BinaryIO

from workflows.plan.worktrees import GIT_TIMEOUT_S, MAX_GIT_OUTPUT

__all__ = ["GitError", "GitResult", "GitUnavailable", "git", "git_env"]

STDERR_SHOWN = 2000
_CHUNK = 64 * 1024
_IDENTITY = {
    "GIT_AUTHOR_NAME": "ponder",
    "GIT_AUTHOR_EMAIL": "ponder@localhost",
    "GIT_AUTHOR_DATE": "@0 +0000",
    "GIT_COMMITTER_NAME": "ponder",
    "GIT_COMMITTER_EMAIL": "ponder@localhost",
    "GIT_COMMITTER_DATE": "@0 +0000",
}


class GitError(RuntimeError):
    """A git command failed, timed out or wrote more than its limit."""


class GitUnavailable(GitError):
    """No git executable on the worker's PATH."""


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: bytes
    stderr: str
    over_limit: bool = False
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.over_limit and not self.timed_out

    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace").strip()

    def why(self) -> str:
        if self.timed_out:
            return f"git ran past its {GIT_TIMEOUT_S} s timeout and was killed"
        if self.over_limit:
            return "git's output passed its limit and the command was stopped"
        return self.stderr.strip() or f"git exited {self.returncode}"


def git_env(**extra: str) -> dict[str, str]:
    """The whole environment of a git command (nothing else is inherited)."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": "/nonexistent",
        "XDG_CONFIG_HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "LC_ALL": "C",
        **_IDENTITY,
    }
    env.update(extra)
    return env


def _executable() -> str:
    found = shutil.which("git", path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise GitUnavailable("no git executable on the worker's PATH")
    return found


def git(
    directory: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    limit: int = MAX_GIT_OUTPUT,
    sink: BinaryIO | None = None,
) -> GitResult:
    """``git -C directory args`` with the safe environment (``env`` adds to it); stdout goes to
    ``sink`` when given (then ``stdout`` is empty), else it is returned."""
    command = [
        _executable(),
        "-C",
        directory,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "gc.auto=0",  # no background gc started on the user's repository
        *args,
    ]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=git_env(**(env or {})),
            start_new_session=True,  # the timeout kills git and anything it started
            close_fds=True,
        )
        expired = threading.Event()

        def kill() -> None:
            expired.set()
            _kill_group(process)

        timer = threading.Timer(timeout, kill)
        timer.start()
        kept: list[bytes] = []
        total = 0
        over = False
        try:
            assert process.stdout is not None
            while chunk := process.stdout.read(_CHUNK):
                total += len(chunk)
                if total > limit:
                    over = True
                    _kill_group(process)
                    break
                if sink is not None:
                    sink.write(chunk)
                else:
                    kept.append(chunk)
            process.wait()
        finally:
            timer.cancel()
            if process.poll() is None:
                _kill_group(process)
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        errors.seek(0)
        stderr = errors.read(STDERR_SHOWN * 4).decode("utf-8", errors="replace")[:STDERR_SHOWN]
    return GitResult(
        process.returncode, b"".join(kept), stderr, over_limit=over, timed_out=expired.is_set()
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
