"""The git activities of a worktree-isolated fan-out (docs/plans.md, "Worktree fan-out").

One activity per move of ``workflows.plan.worktrees`` (probe, base, add, finish, merge, land);
git runs only here, through ``activities.plan.git`` (no shell, no hooks, no filter, an
explicit git directory, work tree and environment, a timeout, bounded output), in a thread so
the worker's event loop never waits.

Which repository: the workspace's is found once per move (``discover``); an item's worktree is
named by its registration in that repository, never by the ``.git`` file inside it, which the
item's agent can write. A worktree whose ``.git`` no longer points at its registration is
removed and the run refused (``worktree.tampered``) before git runs in it.

Where things are written: every path is derived here from the run id (held to the calling
workflow by ``check_writer``, never taken from input) as ``<run dir>/worktrees/<name>``; the
temporary indexes, the items' worktrees, their patches and the scratch merge live there. The
workspace itself is read (a temporary index over its files) and written once, by ``land``, to
its files only. Its repository gains the worktrees' registrations (``.git/worktrees``, removed
with each worktree) and the objects of the base and the items' work; no ref, no HEAD and no
index of it changes.

Each activity can be retried from the start: ``add`` and ``merge`` replace a worktree left by
an attempt that died, ``finish`` writes the patch before it removes the worktree (a retry finds
one or the other), and ``land`` looks at the workspace before it touches it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeats import in_thread
from activities.plan.git import (
    GitError,
    GitResult,
    GitUnavailable,
    Repo,
    WorktreeTampered,
    discover,
    git,
    registered,
    relink,
)
from activities.plan.roots import WORKSPACE_REFUSED, outside_roots
from activities.run_store import REFUSED, RunStore, check_writer, refusal
from workflows.plan.activity_contracts import (
    WORKTREE_ADD,
    WORKTREE_BASE,
    WORKTREE_FINISH,
    WORKTREE_LAND,
    WORKTREE_MERGE,
    WORKTREE_PROBE,
)
from workflows.plan.worktrees import (
    EMPTY_TREE,
    MAX_PATCH_BYTES,
    WORKTREE_TAMPERED,
    WORKTREES_DIR,
    WorktreeAdded,
    WorktreeBase,
    WorktreeItemInput,
    WorktreeLanded,
    WorktreeLandInput,
    WorktreeMerged,
    WorktreeMergeInput,
    WorktreePatch,
    WorktreeProbeInput,
    WorktreeRegionInput,
    land_decision,
    merge_name,
    patch_file,
    worktree_name,
)

__all__ = [
    "WORKTREE_ADD",
    "WORKTREE_BASE",
    "WORKTREE_FAILED",
    "WORKTREE_FINISH",
    "WORKTREE_LAND",
    "WORKTREE_MERGE",
    "WORKTREE_PROBE",
    "WorktreeActivities",
    "workspace_tree",
]

WORKTREE_FAILED = "worktree.git"
"""The failure type of a git command that failed (retried: a lock held a moment is common)."""
_DIFF = ("diff", "--cached", "--binary", "--full-index", "--no-renames", "--no-ext-diff")
_DIFF_TAIL = ("--no-textconv", "--no-color")
In = TypeVar("In", bound=WorktreeRegionInput)
Out = TypeVar("Out")


def _checked(result: GitResult, what: str) -> GitResult:
    if not result.ok:
        raise GitError(f"{what}: {result.why()}")
    return result


def _sha256(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while block := f.read(1 << 16):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _prefix(repo: Repo) -> str:
    return _checked(git(repo, "rev-parse", "--show-prefix"), "rev-parse --show-prefix").text()


def _subtree(repo: Repo, tree: str, prefix: str) -> str:
    """The id of ``prefix``'s subtree of ``tree`` (the empty tree when git holds nothing
    there: a workspace directory with no file in it)."""
    if not prefix:
        return tree
    found = git(repo, "rev-parse", "--verify", "-q", f"{tree}:{prefix.rstrip('/')}")
    return found.text() if found.ok and found.text() else EMPTY_TREE


def workspace_tree(workspace: Repo, index: Path) -> tuple[str, str]:
    """(tree, prefix): the workspace's work tree as git would commit it now (tracked and
    untracked files, not ignored ones), built in the temporary index ``index`` from a copy of
    the repository's own index (its stat cache makes ``add -A`` fast); the real index is only
    read."""
    prefix = _prefix(workspace)
    source = Path(workspace.git_dir, "index")
    index.unlink(missing_ok=True)
    if source.is_file():
        shutil.copyfile(source, index)
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        _checked(git(workspace, "add", "-A", env=env), "add -A (temporary index)")
        tree = _checked(git(workspace, "write-tree", env=env), "write-tree").text()
    finally:
        index.unlink(missing_ok=True)
        Path(f"{index}.lock").unlink(missing_ok=True)
    return tree, prefix


class WorktreeActivities:
    def __init__(self, store: RunStore, roots: list[str]) -> None:
        self.store = store
        self.roots = roots
        """Real paths of the workspace roots this worker declares."""

    # -- activities ---------------------------------------------------------------------------

    @activity.defn(name=WORKTREE_PROBE)
    async def probe(self, input: WorktreeProbeInput) -> list[str]:
        """Why the workspace cannot take worktrees (empty: it can): preflight's
        ``worktree-unavailable``."""
        problem = await in_thread(self._probe, input.workspace)
        return [] if problem is None else [problem]

    @activity.defn(name=WORKTREE_BASE)
    async def base(self, input: WorktreeRegionInput) -> WorktreeBase:
        return await self._run(self._base, input)

    @activity.defn(name=WORKTREE_ADD)
    async def add(self, input: WorktreeItemInput) -> WorktreeAdded:
        return await self._run(self._add, input)

    @activity.defn(name=WORKTREE_FINISH)
    async def finish(self, input: WorktreeItemInput) -> WorktreePatch:
        return await self._run(self._finish, input)

    @activity.defn(name=WORKTREE_MERGE)
    async def merge(self, input: WorktreeMergeInput) -> WorktreeMerged:
        return await self._run(self._merge, input)

    @activity.defn(name=WORKTREE_LAND)
    async def land(self, input: WorktreeLandInput) -> WorktreeLanded:
        return await self._run(self._land, input)

    async def _run(self, fn: Callable[[In], Out], input: In) -> Out:
        """Run ``fn`` in a thread with the run directory and the workspace checked first; a
        refusal is coded and never retried, a git failure is retried."""
        try:
            return await in_thread(self._confined_call, fn, input)
        except REFUSED as exc:
            raise refusal(exc) from None
        except WorktreeTampered as exc:
            raise ApplicationError(str(exc), type=WORKTREE_TAMPERED, non_retryable=True) from None
        except GitUnavailable as exc:
            raise ApplicationError(str(exc), type=WORKTREE_FAILED, non_retryable=True) from None
        except (GitError, OSError) as exc:
            raise ApplicationError(str(exc), type=WORKTREE_FAILED) from None

    def _confined_call(self, fn: Callable[[In], Out], input: In) -> Out:
        check_writer(input.run_id, self.store, input.chain)
        problem = outside_roots(input.workspace, self.roots)
        if problem is not None:
            raise ApplicationError(problem, type=WORKSPACE_REFUSED, non_retryable=True)
        return fn(input)

    # -- the moves ----------------------------------------------------------------------------

    def _probe(self, workspace: str) -> str | None:
        problem = outside_roots(workspace, self.roots)
        if problem is not None:
            return problem
        if not os.path.isdir(workspace):
            return f"workspace {workspace!r} is not a directory on the worker"
        try:
            discover(workspace)
        except GitUnavailable as exc:
            return f"{exc}; fix: install git on the worker, or use fanout.isolation: none"
        except WorktreeTampered as exc:
            return str(exc)
        except GitError as exc:
            return (
                f"{exc}; fix: run the plan in a git repository (git init), or use "
                "fanout.isolation: none"
            )
        return None

    def _dir(self, run_id: str, name: str = "") -> Path:
        """``<run dir>/worktrees[/name]`` (the run store refuses a path leading out of it)."""
        return self.store.path(run_id, f"{WORKTREES_DIR}/{name}" if name else WORKTREES_DIR)

    def _base(self, input: WorktreeRegionInput) -> WorktreeBase:
        root = self._dir(input.run_id)
        root.mkdir(parents=True, exist_ok=True)
        workspace = discover(input.workspace)
        tree, prefix = workspace_tree(workspace, root / f".index-{input.step}")
        head = git(workspace, "rev-parse", "--verify", "-q", "HEAD^{commit}")
        parents = ["-p", head.text()] if head.ok and head.text() else []
        message = f"ponder: base of {input.run_id} {input.step}"
        commit = _checked(
            git(workspace, "commit-tree", tree, *parents, "-m", message), "commit-tree"
        ).text()
        return WorktreeBase(
            commit=commit, tree=tree, subtree=_subtree(workspace, tree, prefix), prefix=prefix
        )

    @contextlib.contextmanager
    def _registry(self, workspace: Repo) -> Iterator[None]:
        """Hold the repository's worktree registry: ``git worktree add`` reads every other
        registration and fails on one half made or half removed (``failed to read
        .git/worktrees/<name>/commondir``), so adds and removes of one repository take turns
        (an exclusive ``flock`` on its common directory: across threads and worker processes,
        and no file is created for it)."""
        fd = os.open(workspace.common_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _remove(self, workspace: Repo, path: Path) -> None:
        """Remove a worktree of the run (and its registration), whatever state it is in: a
        ``.git`` an agent replaced is put back first, since git removes only a worktree that
        points back at its registration.

        Never ``git worktree prune``: it scans every registration and races the other items'
        ``worktree add`` (a half-made one looks stale to it). A registration left behind when
        ``remove`` fails goes with the user's next prune or gc; ``add --force`` reuses the path.
        """
        if path.exists() or path.is_symlink():
            with self._registry(workspace):
                if path.is_dir() and not path.is_symlink():
                    relink(workspace, path)
                git(workspace, "worktree", "remove", "--force", "--force", str(path))
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)

    def _add_worktree(self, workspace: Repo, path: Path, commit: str) -> Repo:
        self._remove(workspace, path)  # an attempt that died may have left one
        # Only the registration holds the registry; the checkout (the slow part in a big
        # repository) runs beside the other items', in the worktree's own index.
        with self._registry(workspace):
            added = git(
                workspace, "worktree", "add", "--force", "--detach", "--no-checkout",
                str(path), commit,
            )  # fmt: skip
        _checked(added, "worktree add")
        tree = self._worktree(workspace, path)
        _checked(git(tree, "reset", "-q", "--hard", commit), "checkout (reset --hard)")
        return tree

    def _worktree(self, workspace: Repo, path: Path) -> Repo:
        tree = registered(workspace, path)
        if tree is None:
            raise GitError(f"no worktree of the repository is registered at {str(path)!r}")
        return tree

    def _add(self, input: WorktreeItemInput) -> WorktreeAdded:
        path = self._dir(input.run_id, worktree_name(input.step, input.item))
        self._add_worktree(discover(input.workspace), path, input.base.commit)
        inner = path / input.base.prefix
        inner.mkdir(parents=True, exist_ok=True)  # git keeps no empty directory
        return WorktreeAdded(workspace=str(inner).rstrip("/"))

    def _write_diff(self, directory: Repo, commit: str, target: Path) -> tuple[str, int] | None:
        """The diff of ``directory``'s subtree (its cwd) against ``commit`` into ``target``:
        (sha256, bytes), or None past ``MAX_PATCH_BYTES`` (nothing kept)."""
        tmp = target.with_name(f".{target.name}.tmp")
        with tmp.open("wb") as sink:
            result = git(
                directory, *_DIFF, *_DIFF_TAIL, commit, "--", ".",
                sink=sink, limit=MAX_PATCH_BYTES,
            )  # fmt: skip
        if result.over_limit:
            tmp.unlink(missing_ok=True)
            return None
        if not result.ok:
            tmp.unlink(missing_ok=True)
            raise GitError(f"diff: {result.why()}")
        os.replace(tmp, target)
        return _sha256(target)

    def _finish(self, input: WorktreeItemInput) -> WorktreePatch:
        name = worktree_name(input.step, input.item)
        path = self._dir(input.run_id, name)
        target = self.store.path(input.run_id, patch_file(name))
        out = WorktreePatch(item=input.item)
        workspace = discover(input.workspace)
        tree = self._kept(workspace, path) if path.is_dir() else None
        if input.capture and tree is not None:
            inner = tree.at(path / input.base.prefix)
            _checked(git(inner, "add", "-A"), "add -A (item worktree)")
            written = self._write_diff(inner, input.base.commit, target)
            if written is None:
                out = WorktreePatch(item=input.item, over_ceiling=True)
            else:
                sha, size = written
                out = WorktreePatch(item=input.item, sha256=sha, bytes=size, files=_files(target))
        elif input.capture and target.is_file():  # a retry: the patch is kept, the tree gone
            sha, size = _sha256(target)
            out = WorktreePatch(item=input.item, sha256=sha, bytes=size, files=_files(target))
        self._remove(workspace, path)
        return out

    def _kept(self, workspace: Repo, path: Path) -> Repo:
        """The item's worktree, checked before git runs in it: one whose ``.git`` its agent
        replaced is removed and refused, and nothing of it is kept."""
        try:
            return self._worktree(workspace, path)
        except WorktreeTampered:
            self._remove(workspace, path)
            raise

    def _merge(self, input: WorktreeMergeInput) -> WorktreeMerged:
        name = merge_name(input.step)
        scratch = self._dir(input.run_id, name)
        workspace = discover(input.workspace)
        merging = self._add_worktree(workspace, scratch, input.base.commit)
        try:
            total = 0
            for patch in input.patches:
                path = self.store.path(
                    input.run_id, patch_file(worktree_name(input.step, patch.item))
                )
                if not path.is_file() or _sha256(path)[0] != patch.sha256:
                    return _conflict(patch.item, "its patch in the run directory is missing or "
                                     "changed since its sha256 was recorded")  # fmt: skip
                size = path.stat().st_size
                total += size
                if total > MAX_PATCH_BYTES:
                    return _conflict(
                        patch.item,
                        f"the patches up to it total {total:,} bytes, over the "
                        f"{MAX_PATCH_BYTES:,}-byte ceiling of a region's combined patch",
                    )
                if size == 0:
                    continue  # the item changed nothing
                applied = git(merging, "apply", "--3way", "--whitespace=nowarn", str(path))
                if not applied.ok:
                    return _conflict(patch.item, _conflicts(applied))
            _checked(git(merging, "add", "-A"), "add -A (scratch)")
            tree = _checked(git(merging, "write-tree"), "write-tree (scratch)").text()
            target = self.store.path(input.run_id, patch_file(name))
            inner = scratch / input.base.prefix
            inner.mkdir(parents=True, exist_ok=True)
            written = self._write_diff(merging.at(inner), input.base.commit, target)
            if written is None:
                last = input.patches[-1].item if input.patches else 0
                return _conflict(last, "the combined patch is over the ceiling")
            sha, size = written
            subtree = _subtree(merging, tree, input.base.prefix)
            return WorktreeMerged(ok=True, subtree=subtree, sha256=sha, bytes=size)
        finally:
            self._remove(workspace, scratch)

    def _land(self, input: WorktreeLandInput) -> WorktreeLanded:
        patch = self.store.path(input.run_id, patch_file(merge_name(input.step)))
        root = self._dir(input.run_id)
        index = root / f".index-{input.step}-land"
        workspace = discover(input.workspace)

        def current() -> str:
            tree, prefix = workspace_tree(workspace, index)
            return _subtree(workspace, tree, prefix)

        base, merged = input.base.subtree, input.merged_subtree
        decision = land_decision(current(), base=base, merged=merged)
        if decision == "done":
            return WorktreeLanded(outcome="done", detail="the workspace already holds the merge")
        if decision == "conflict":
            return WorktreeLanded(
                outcome="conflict",
                detail="the workspace changed since the region started (its files are neither "
                "the base nor the merged result); nothing was applied",
            )
        if not patch.is_file() or _sha256(patch)[0] != input.sha256:
            return WorktreeLanded(
                outcome="conflict",
                detail="the combined patch in the run directory is missing or changed since "
                "its sha256 was recorded; nothing was applied",
            )
        # Files only (no --index): the user's index stays as it was.
        applied = git(workspace, "apply", "--whitespace=nowarn", str(patch))
        if not applied.ok:
            return WorktreeLanded(outcome="conflict", detail=f"git apply: {applied.why()}")
        after = current()
        if after != merged:
            return WorktreeLanded(
                outcome="conflict",
                detail=f"after the apply the workspace is tree {after}, not the merged {merged}",
            )
        return WorktreeLanded(outcome="apply")


def _files(patch: Path) -> int:
    count = 0
    with patch.open("rb") as f:
        for line in f:
            if line.startswith(b"diff --git "):
                count += 1
    return count


def _conflicts(result: GitResult) -> str:
    """The conflicted paths git names (``U path``), else its message."""
    paths = [line[2:] for line in result.stderr.splitlines() if line.startswith("U ")]
    if paths:
        return "git apply --3way left conflicts in " + ", ".join(paths[:20])
    return f"git apply --3way: {result.why()}"


def _conflict(item: int, detail: str) -> WorktreeMerged:
    return WorktreeMerged(ok=False, conflict_item=item, detail=detail)
