"""The git moves of a worktree fan-out, called directly on real repositories (no Temporal).

What the run tests cannot see from outside: the environment git gets (no inherited ``GIT_*``,
no hooks), the timeout and output bounds, a workspace below the top of its work tree, each
landing decision, the patch ceiling and retried moves.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import activities.plan.worktrees as moves
from activities.plan.git import WorktreeTampered, discover, git
from activities.plan.worktrees import WorktreeActivities
from activities.run_store import RunStore
from client.plan_input import run_workspace
from tests.plans.test_run_worktrees import fanout, files, make_repo
from tests.plans.test_run_worktrees import git as run_git
from workflows.plan.validate import load_plan
from workflows.plan.worktrees import (
    EMPTY_TREE,
    ItemPatch,
    WorktreeBase,
    WorktreeItemInput,
    WorktreeLandInput,
    WorktreeMergeInput,
    WorktreeRegionInput,
    isolated_fanouts,
    land_decision,
    patch_file,
    worktree_name,
)

RUN = "run-1"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def region(tmp_path: Path, workspace: Path) -> tuple[WorktreeActivities, WorktreeRegionInput]:
    store = RunStore(tmp_path / "runs")
    acts = WorktreeActivities(store, [str(workspace)])
    return acts, WorktreeRegionInput(run_id=RUN, workspace=str(workspace), step="fan")


def item(
    at: WorktreeRegionInput, base: WorktreeBase, n: int, *, capture: bool = True
) -> WorktreeItemInput:
    return WorktreeItemInput(**at.model_dump(), item=n, base=base, capture=capture)


def one_item(
    acts: WorktreeActivities, at: WorktreeRegionInput, base: WorktreeBase, n: int, **writes: str
) -> ItemPatch:
    inner = Path(acts._add(item(at, base, n)).workspace)
    for rel, text in writes.items():
        (inner / rel).parent.mkdir(parents=True, exist_ok=True)
        (inner / rel).write_text(text)
    patch = acts._finish(item(at, base, n))
    assert patch.sha256 is not None
    return ItemPatch(item=n, sha256=patch.sha256)


def test_the_base_ignores_the_workers_git_variables_and_changes_nothing(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = (
        run_git(repo, "rev-parse", "HEAD"),
        run_git(repo, "show-ref"),
        run_git(repo, "status", "--porcelain"),
    )
    index = (repo / ".git" / "index").read_bytes()
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # would point git at nothing
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "other-index"))
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    listed = run_git(repo, "ls-tree", "-r", "--name-only", base.commit).split()
    assert listed == [".gitignore", "notes.txt", "shared.txt", "todo.txt"]  # untracked, not ignored
    assert run_git(repo, "show", f"{base.commit}:notes.txt") == "draft, not committed\n"
    assert base.prefix == "" and base.subtree == base.tree
    monkeypatch.delenv("GIT_DIR")
    after = (
        run_git(repo, "rev-parse", "HEAD"),
        run_git(repo, "show-ref"),
        run_git(repo, "status", "--porcelain"),
    )
    assert after == before and (repo / ".git" / "index").read_bytes() == index
    assert not (tmp_path / "other-index").exists()
    assert acts._base(at).commit == base.commit  # a retried base is the same commit


def test_no_hook_runs(tmp_path: Path, repo: Path) -> None:
    ran = tmp_path / "hook-ran"
    for hooks in (repo / ".git" / "hooks", tmp_path / "hooks"):
        hooks.mkdir(exist_ok=True)
        hook = hooks / "post-checkout"
        hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
        hook.chmod(0o755)
    run_git(repo, "config", "core.hooksPath", str(tmp_path / "hooks"))
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    patch = one_item(acts, at, base, 0, **{"new.txt": "n\n"})
    merged = acts._merge(WorktreeMergeInput(**at.model_dump(), base=base, patches=[patch]))
    assert merged.ok and not ran.exists()
    run_git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "plain"), "HEAD")
    assert ran.exists()  # the hook is real: plain git runs it


def test_a_workspace_below_the_top_lands_only_inside_itself(tmp_path: Path, repo: Path) -> None:
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.txt").write_text("v1\n")
    acts, at = region(tmp_path, sub)
    base = acts._base(at)
    assert base.prefix == "pkg/"
    added = Path(acts._add(item(at, base, 0)).workspace)
    assert added == (tmp_path / "runs" / RUN / "worktrees" / "fan-0" / "pkg").resolve()
    (added / "mod.txt").write_text("v2\n")
    (added.parent / "shared.txt").write_text("changed outside the workspace\n")
    patch = acts._finish(item(at, base, 0))
    assert patch.files == 1 and patch.sha256 is not None
    merged = acts._merge(
        WorktreeMergeInput(
            **at.model_dump(), base=base, patches=[ItemPatch(item=0, sha256=patch.sha256)]
        )
    )
    assert merged.ok and merged.subtree is not None and merged.sha256 is not None
    land = WorktreeLandInput(
        **at.model_dump(), base=base, merged_subtree=merged.subtree, sha256=merged.sha256
    )
    assert acts._land(land).outcome == "apply"
    assert (sub / "mod.txt").read_text() == "v2\n"
    assert (repo / "shared.txt").read_text().startswith("1\n")  # outside: untouched
    assert acts._land(land).outcome == "done"  # landing again (a retry) changes nothing


def test_an_empty_workspace_directory_still_has_a_subtree(tmp_path: Path, repo: Path) -> None:
    empty = repo / "empty"
    empty.mkdir()
    acts, at = region(tmp_path, empty)
    base = acts._base(at)
    assert base.subtree == EMPTY_TREE
    assert Path(acts._add(item(at, base, 0)).workspace).is_dir()


def test_landing_refuses_a_workspace_changed_since_the_base(tmp_path: Path, repo: Path) -> None:
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    patch = one_item(acts, at, base, 0, **{"new.txt": "n\n"})
    merged = acts._merge(WorktreeMergeInput(**at.model_dump(), base=base, patches=[patch]))
    assert merged.subtree is not None and merged.sha256 is not None
    (repo / "todo.txt").write_text("someone edited this meanwhile\n")
    before = files(repo)
    land = WorktreeLandInput(
        **at.model_dump(), base=base, merged_subtree=merged.subtree, sha256=merged.sha256
    )
    landed = acts._land(land)
    assert landed.outcome == "conflict" and "changed since the region started" in landed.detail
    assert files(repo) == before
    tampered = land.model_copy(update={"sha256": "0" * 64})
    (repo / "todo.txt").write_text("untracked\n")
    assert "missing or changed" in acts._land(tampered).detail


def test_land_decision() -> None:
    assert land_decision("m", base="b", merged="m") == "done"
    assert land_decision("b", base="b", merged="m") == "apply"
    assert land_decision("x", base="b", merged="m") == "conflict"
    assert land_decision("b", base="b", merged="b") == "done"  # nothing to land


def test_a_patch_over_the_ceiling_keeps_nothing(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(moves, "MAX_PATCH_BYTES", 2000)
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    inner = Path(acts._add(item(at, base, 0)).workspace)
    (inner / "big.txt").write_text("x" * 5000)
    patch = acts._finish(item(at, base, 0))
    assert patch.over_ceiling and patch.sha256 is None
    assert not (tmp_path / "runs" / RUN / patch_file(worktree_name("fan", 0))).exists()
    small = [one_item(acts, at, base, n, **{f"f{n}.txt": "y" * 900}) for n in (1, 2, 3)]
    merged = acts._merge(WorktreeMergeInput(**at.model_dump(), base=base, patches=small))
    assert not merged.ok and merged.conflict_item == 2 and "ceiling" in merged.detail


def test_retried_moves_start_over_or_find_their_work(tmp_path: Path, repo: Path) -> None:
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    first = Path(acts._add(item(at, base, 0)).workspace)
    (first / "half.txt").write_text("an attempt that died\n")
    again = Path(acts._add(item(at, base, 0)).workspace)  # the retried add starts clean
    assert again == first and not (again / "half.txt").exists()
    (again / "done.txt").write_text("d\n")
    patch = acts._finish(item(at, base, 0))
    retried = acts._finish(item(at, base, 0))  # the worktree is gone, the patch is kept
    assert retried == patch and not again.exists()
    failed = acts._add(item(at, base, 1))
    assert acts._finish(item(at, base, 1, capture=False)).sha256 is None
    assert not Path(failed.workspace).exists()
    assert run_git(repo, "worktree", "list").count("\n") == 1


def test_an_unborn_head_has_a_base_too(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run_git(fresh, "init", "-q")
    (fresh / "a.txt").write_text("a\n")
    acts, at = region(tmp_path, fresh)
    base = acts._base(at)
    assert run_git(fresh, "cat-file", "-t", base.commit).strip() == "commit"
    assert acts._probe(str(fresh)) is None


def test_the_probe_names_what_is_missing(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    acts = WorktreeActivities(RunStore(tmp_path / "runs"), [str(repo), str(plain)])
    assert acts._probe(str(repo)) is None
    assert "not in a git work tree" in (acts._probe(str(plain)) or "")
    assert "outside every workspace root" in (acts._probe(str(tmp_path)) or "")
    monkeypatch.setenv("PATH", str(plain))  # a worker without git
    assert "no git executable on the worker's PATH" in (acts._probe(str(repo)) or "")


def test_git_is_bounded_in_time_and_output(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "big.txt").write_text("z" * 200_000)
    run_git(repo, "add", "big.txt")
    shown = git(discover(str(repo)), "show", ":big.txt", limit=1000)
    assert shown.over_limit and not shown.ok and len(shown.stdout) <= 1000
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    pid_file = tmp_path / "git.pid"
    (slow / "git").write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    (slow / "git").chmod(0o755)
    found = discover(str(repo))
    monkeypatch.setenv("PATH", f"{slow}:{os.environ['PATH']}")
    hung = git(found, "status", timeout=0.5)
    assert hung.timed_out and not hung.ok and "timeout" in hung.why()
    # Stopped at its timeout, not waited out (no wall-clock bound for load to break): the hung
    # git is gone once the call returns.
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_items_add_and_remove_their_worktrees_at_once(tmp_path: Path, repo: Path) -> None:
    """``git worktree add`` reads every registration: unserialized, one half made by another
    item fails it (``failed to read .git/worktrees/<name>/commondir``)."""
    acts, at = region(tmp_path, repo)
    base = acts._base(at)

    def cycle(n: int) -> None:
        for _ in range(4):
            acts._add(item(at, base, n))
            acts._finish(item(at, base, n, capture=False))

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(cycle, range(32)))  # a failed add raises here
    assert run_git(repo, "worktree", "list").count("\n") == 1


def test_the_client_gives_a_worktree_plan_the_cwd_as_its_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = load_plan(fanout([1, 2]))
    monkeypatch.chdir(tmp_path)
    assert isolated_fanouts(plan) == ["fan"]
    assert run_workspace(None, plan) == str(tmp_path)
    assert run_workspace("rel", plan) == str(tmp_path / "rel")
    plain = plan.model_copy(deep=True)
    plain.steps[0].fanout.isolation = "none"  # type: ignore[union-attr]
    assert isolated_fanouts(plain) == [] and run_workspace(None, plain) is None


def evil_tree(root: Path, marker: Path, git_file: str | None = "gitdir: evilgit\n") -> None:
    """What a file-writing agent plants in its work tree: a git directory whose configuration
    defines a clean filter (a script beside it that marks ``marker``), attributes that apply it
    to every file, and, unless ``git_file`` is None, the tree's ``.git`` pointed at it."""
    evil = root / "evilgit"
    for sub in ("objects", "refs/heads"):
        (evil / sub).mkdir(parents=True, exist_ok=True)
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "config").write_text(
        '[core]\n\trepositoryformatversion = 0\n[filter "x"]\n\tclean = sh evil.sh\n'
    )
    (root / "evil.sh").write_text(f"touch {marker}\ncat\n")
    (root / ".gitattributes").write_text("* filter=x\n")
    (root / "todo.txt").write_text("changed by the agent\n")
    if git_file is not None:
        (root / ".git").write_text(git_file)


def test_a_worktree_whose_git_file_was_replaced_is_refused_and_runs_nothing(
    tmp_path: Path, repo: Path
) -> None:
    marker = tmp_path / "filter-ran"
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    inner = Path(acts._add(item(at, base, 0)).workspace)
    evil_tree(inner, marker)
    shutil.copytree(inner, tmp_path / "copy", symlinks=True)
    with pytest.raises(WorktreeTampered, match="no longer points at the repository"):
        acts._finish(item(at, base, 0))
    assert not marker.exists()
    assert not inner.exists() and run_git(repo, "worktree", "list").count("\n") == 1
    assert not (tmp_path / "runs" / RUN / patch_file(worktree_name("fan", 0))).exists()
    run_git(tmp_path / "copy", "add", "-A")  # plain git takes the planted .git: the filter runs
    assert marker.exists()


@pytest.mark.parametrize("how", ["directory", "removed", "symlink", "sibling"])
def test_every_other_git_in_a_worktree_is_refused(tmp_path: Path, repo: Path, how: str) -> None:
    marker = tmp_path / "filter-ran"
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    inner = Path(acts._add(item(at, base, 0)).workspace)
    sibling = Path(acts._add(item(at, base, 1)).workspace)
    evil_tree(inner, marker, git_file=None)
    link = inner / ".git"
    if how == "directory":
        link.unlink()
        shutil.copytree(inner / "evilgit", link)
    elif how == "removed":
        link.unlink()
    elif how == "symlink":
        link.unlink()
        link.symlink_to(inner / "evilgit")
    else:  # the other item's registration: its index and its patch are not this item's
        link.write_text((sibling / ".git").read_text())
    with pytest.raises(WorktreeTampered):
        acts._finish(item(at, base, 0, capture=how != "removed"))
    assert not marker.exists() and not inner.exists()
    assert acts._finish(item(at, base, 1)).sha256 is not None  # the sibling is untouched
    assert run_git(repo, "worktree", "list").count("\n") == 1


def test_no_filter_or_merge_driver_runs_even_one_the_repository_defines(
    tmp_path: Path, repo: Path
) -> None:
    """The repository's own configuration (which an agent working in the workspace itself can
    write) defines a filter and a merge driver; the tree's attributes name them. Ponder's git
    takes and writes files byte for byte and never runs either."""
    marker = tmp_path / "driver-ran"
    script = tmp_path / "driver.sh"
    script.write_text(f'#!/bin/sh\necho "$*" >> {marker}\ncat\n')
    script.chmod(0o755)
    run_git(repo, "config", "filter.x.clean", f"{script} clean")
    run_git(repo, "config", "filter.x.smudge", f"{script} smudge")
    run_git(repo, "config", "filter.x.required", "true")
    run_git(repo, "config", "filter.odd=name.process", f"{script} process")
    run_git(repo, "config", "merge.x.driver", f"{script} merge %O %A %B")
    (repo / ".gitattributes").write_text("* filter=x merge=x\n*.odd filter=odd=name\n")
    (repo / "w.odd").write_text("odd\n")
    acts, at = region(tmp_path, repo)
    base = acts._base(at)
    assert run_git(repo, "show", f"{base.commit}:todo.txt") == "untracked\n"
    ours = one_item(acts, at, base, 0, **{"shared.txt": "one\n", "w.odd": "odder\n"})
    theirs = one_item(acts, at, base, 1, **{"shared.txt": "uno\n"})
    merged = acts._merge(WorktreeMergeInput(**at.model_dump(), base=base, patches=[ours, theirs]))
    assert not merged.ok and merged.conflict_item == 1  # the driver would have resolved it
    alone = acts._merge(WorktreeMergeInput(**at.model_dump(), base=base, patches=[ours]))
    assert alone.ok and alone.subtree is not None and alone.sha256 is not None
    land = WorktreeLandInput(
        **at.model_dump(), base=base, merged_subtree=alone.subtree, sha256=alone.sha256
    )
    assert acts._land(land).outcome == "apply"
    assert (repo / "w.odd").read_text() == "odder\n"
    assert not marker.exists(), marker.read_text()
    run_git(repo, "add", "-A")  # plain git runs the repository's filter
    assert marker.exists()


def test_a_workspace_whose_git_file_points_into_itself_is_refused(
    tmp_path: Path, repo: Path
) -> None:
    marker = tmp_path / "filter-ran"
    shutil.move(repo / ".git", repo / "evilgit")
    evil_tree(repo, marker)
    acts, at = region(tmp_path, repo)
    assert "inside the work tree itself" in (acts._probe(str(repo)) or "")
    with pytest.raises(WorktreeTampered):
        acts._base(at)
    assert not marker.exists()
