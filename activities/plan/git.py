"""Running git for worktree-isolated fan-out: one helper, one environment, bounded.

Every git command a plan run causes goes through :func:`git`, which names the repository in
full (a :class:`Repo`):

- ``--git-dir`` and ``--work-tree`` always explicit: git never looks for a ``.git`` in a work
  tree an agent wrote to. The workspace's repository is found once (:func:`discover`, a
  ``rev-parse`` that reads no file of the work tree but ``.git``, which it then checks); an
  item's worktree is named by its registration in that repository (:func:`registered`), and a
  worktree whose ``.git`` no longer points there is refused (:class:`WorktreeTampered`) before
  git runs in it;
- no program a repository could name runs: hooks off (``core.hooksPath=/dev/null``), no
  fsmonitor daemon, no attributes file outside the tree, no signing program, no network
  (``protocol.allow=never``), and every clean/smudge filter and merge driver the configuration
  git reads defines is emptied (:func:`drivers`), so a ``.gitattributes`` in the tree names
  nothing that runs: files are taken and written byte for byte;
- ``git -C DIR`` (never a shell) with an explicit environment, never the worker's: ``PATH`` (to
  find git), ``HOME`` a directory that does not exist, ``GIT_CONFIG_NOSYSTEM=1``,
  ``GIT_CONFIG_GLOBAL=/dev/null`` and ``GIT_ATTR_NOSYSTEM=1`` (no system or user configuration
  or attributes), no inherited ``GIT_*`` variable, a fixed author and committer with a fixed
  date (so a commit of the same tree and parent is the same commit every time);
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from workflows.plan.worktrees import GIT_TIMEOUT_S, MAX_GIT_OUTPUT, WORKTREE_TAMPERED

__all__ = [
    "GitError",
    "GitResult",
    "GitUnavailable",
    "Repo",
    "WorktreeTampered",
    "discover",
    "drivers",
    "git",
    "git_env",
    "registered",
    "relink",
]

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
_FIXED = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.attributesFile=/dev/null",
    "commit.gpgSign=false",
    "protocol.allow=never",  # a partial clone's lazy fetch would reach a remote
    "gc.auto=0",  # no background gc started on the user's repository
    "maintenance.auto=false",
)
_EMPTY = "PONDER_GIT_EMPTY"
"""An environment variable holding ``""``, for ``--config-env`` (git 2.31): a driver whose name
holds ``=`` cannot be named by ``-c``, which splits at the first one."""
_FALSE = "PONDER_GIT_FALSE"
_DRIVER_KEYS = r"^(filter\..+\.(clean|smudge|process|required)|merge\..+\.driver)$"


class GitError(RuntimeError):
    """A git command failed, timed out or wrote more than its limit."""


class GitUnavailable(GitError):
    """No git executable on the worker's PATH."""


class WorktreeTampered(GitError):
    """A work tree's ``.git`` is not what git wrote when the repository or the worktree was
    made: git would take its configuration (filters, hooks) from wherever it now points."""

    code = WORKTREE_TAMPERED


@dataclass(frozen=True)
class Repo:
    """Where one git command runs: the repository's git directory and work tree, named in full,
    and the directory inside the work tree it runs from (which sets git's prefix)."""

    git_dir: str
    work_tree: str
    cwd: str
    common_dir: str
    neutral: tuple[tuple[str, str], ...] = ()
    """``(key, env var)`` overrides that empty the filters and merge drivers the repository's
    configuration defines (:func:`drivers`)."""

    def at(self, cwd: str | os.PathLike[str]) -> Repo:
        return replace(self, cwd=str(cwd))


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
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PAGER": "cat",
        "LC_ALL": "C",
        _EMPTY: "",
        _FALSE: "false",
        **_IDENTITY,
    }
    env.update(extra)
    return env


def _executable() -> str:
    found = shutil.which("git", path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise GitUnavailable("no git executable on the worker's PATH")
    return found


def _options(neutral: tuple[tuple[str, str], ...]) -> list[str]:
    options: list[str] = []
    for setting in _FIXED:
        options += ["-c", setting]
    for key, variable in neutral:
        if "=" in key:
            options.append(f"--config-env={key}={variable}")
        else:
            options += ["-c", f"{key}={'' if variable == _EMPTY else 'false'}"]
    return options


def git(
    repo: Repo,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    limit: int = MAX_GIT_OUTPUT,
    sink: BinaryIO | None = None,
) -> GitResult:
    """``git args`` in ``repo`` with the safe environment (``env`` adds to it); stdout goes to
    ``sink`` when given (then ``stdout`` is empty), else it is returned."""
    command = [
        _executable(),
        "-C",
        repo.cwd,
        f"--git-dir={repo.git_dir}",
        f"--work-tree={repo.work_tree}",
        *_options(repo.neutral),
        *args,
    ]
    return _run(command, env, timeout, limit, sink)


def discover(directory: str) -> Repo:
    """The repository whose work tree holds ``directory`` (the workspace), found once.

    Its git directory must be the work tree's own ``.git`` directory or lie outside the work
    tree (a linked worktree or a submodule), and a linked worktree's registration must name
    this work tree back: a ``.git`` file pointing into the tree itself, where anyone who writes
    files there also writes the configuration, is refused."""
    found = _run(
        [_executable(), "-C", directory, *_options(()), "rev-parse",
         "--absolute-git-dir", "--git-common-dir", "--show-toplevel"],
        None, GIT_TIMEOUT_S, MAX_GIT_OUTPUT, None,
    )  # fmt: skip
    if not found.ok:
        raise GitError(f"workspace {directory!r} is not in a git work tree ({found.why()})")
    lines = found.stdout.decode("utf-8", errors="surrogateescape").split("\n")
    if len(lines) < 3 or not lines[2]:
        raise GitError(f"workspace {directory!r} is not in a git work tree (a bare repository?)")
    git_dir = os.path.realpath(lines[0])
    common = os.path.realpath(os.path.join(directory, lines[1]))
    top = os.path.realpath(lines[2])
    own = os.path.join(top, ".git")
    if git_dir != own and _inside(git_dir, top):
        raise WorktreeTampered(
            f"the work tree {top!r} names the git directory {git_dir!r}, inside the work tree "
            "itself; fix: point its .git back at the repository (or remove it)"
        )
    if os.path.isfile(os.path.join(git_dir, "commondir")):  # a linked worktree
        back = _read_link(Path(git_dir, "gitdir"))
        if back is None or os.path.realpath(back) != os.path.realpath(own):
            raise WorktreeTampered(
                f"the worktree registration {git_dir!r} names another work tree than {top!r}"
            )
    repo = Repo(git_dir=git_dir, work_tree=top, cwd=directory, common_dir=common)
    return replace(repo, neutral=drivers(repo))


def registered(workspace: Repo, path: Path) -> Repo | None:
    """The worktree at ``path`` as its registration in ``workspace``'s repository names it (the
    registration lives in that repository's git directory, which no agent in the worktree can
    reach); None when no registration names it (an add that died before it registered). A
    ``.git`` in the worktree other than the file git wrote, pointing at that registration, is
    :class:`WorktreeTampered`."""
    admin = _registration(workspace.common_dir, path)
    if admin is None:
        return None
    link = path / ".git"
    target = _read_link(link) if link.is_file() and not link.is_symlink() else None
    if target is None or os.path.realpath(os.path.join(path, target)) != admin:
        raise WorktreeTampered(
            f"the worktree {str(path)!r} no longer points at the repository ponder made it in "
            "(its .git was replaced, removed or redirected); nothing of it is taken"
        )
    repo = Repo(git_dir=admin, work_tree=str(path), cwd=str(path), common_dir=workspace.common_dir)
    return replace(repo, neutral=drivers(repo))


def relink(workspace: Repo, path: Path) -> None:
    """Put back the ``.git`` file git wrote in the worktree at ``path`` (so ``git worktree
    remove`` accepts it), whatever the worktree holds there now."""
    admin = _registration(workspace.common_dir, path)
    if admin is None:
        return
    link = path / ".git"
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.write_text(f"gitdir: {admin}\n")


def drivers(repo: Repo) -> tuple[tuple[str, str], ...]:
    """Overrides that disarm every clean/smudge filter and merge driver ``repo``'s configuration
    defines: a ``.gitattributes`` in the work tree can name one, and git would run it.

    A filter becomes empty and not required (git then takes the bytes as they are); a merge
    driver becomes ``false``, a conflict, since an empty one would keep one side silently."""
    listed = _run(
        [_executable(), "-C", repo.cwd, f"--git-dir={repo.git_dir}", *_options(()),
         "config", "--name-only", "-z", "--get-regexp", _DRIVER_KEYS],
        None, GIT_TIMEOUT_S, MAX_GIT_OUTPUT, None,
    )  # fmt: skip
    if listed.returncode == 1 and not listed.stdout:
        return ()  # git config exits 1 when nothing matches
    if not listed.ok:
        raise GitError(f"config --get-regexp: {listed.why()}")
    keys = {k for k in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if k}
    out = []
    for key in sorted(keys):
        out.append((key, _EMPTY if key.startswith("filter.") and not key.endswith(".required")
                    else _FALSE))  # fmt: skip
    return tuple(out)


def _registration(common_dir: str, path: Path) -> str | None:
    """The registration directory (``<common>/worktrees/<id>``) whose ``gitdir`` names
    ``path/.git``: git names it after the path's last part, with a number added when taken."""
    root = Path(common_dir, "worktrees")
    want = os.path.realpath(path / ".git")
    candidates = [root / path.name]
    with contextlib.suppress(OSError):
        candidates += sorted(root.iterdir())  # a renamed one (git also rewrites odd characters)
    for candidate in candidates:
        back = _read_link(candidate / "gitdir")
        if back is not None and os.path.realpath(back) == want:
            return os.path.realpath(candidate)
    return None


def _read_link(path: Path) -> str | None:
    """The path a ``.git`` file (``gitdir: PATH``) or a registration's ``gitdir`` file holds."""
    try:
        text = path.read_bytes()[:8192].decode("utf-8", "surrogateescape")
    except OSError:
        return None
    text = text.rstrip("\n")
    if text.startswith("gitdir: "):
        text = text[len("gitdir: ") :]
    return text or None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _run(
    command: list[str],
    env: dict[str, str] | None,
    timeout: float,
    limit: int,
    sink: BinaryIO | None,
) -> GitResult:
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
