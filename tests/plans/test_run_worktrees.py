"""Worktree-isolated fan-out through ``PlanRun`` on a real git repository (docs/plans.md, "Worktree
fan-out").

The agent is a small command agent (``worktree_writer.py``) that reads and writes the files its
item names in its cwd: the item's worktree. The worker's workspace root is the repository
alone, so the items' worktrees (under the run directory) are allowed only as the run's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.plans.run_helpers import failure, plan_doc, run, start, trace
from tests.worker_process import KilledWorker
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN
from workflows.plan.limits import estimate_history
from workflows.plan.run_types import PlanRunInput, PlanRunResult
from workflows.plan.validate import load_plan

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

WRITER = Path(__file__).with_name("worktree_writer.py")


def git(repo: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repo(root: Path) -> Path:
    """A repository with a commit, then uncommitted work: a modified tracked file, an untracked
    one and an ignored one."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / "shared.txt").write_text("".join(f"{n}\n" for n in range(1, 9)))
    (root / "notes.txt").write_text("committed\n")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "notes.txt").write_text("draft, not committed\n")
    (root / "todo.txt").write_text("untracked\n")
    (root / "secret.log").write_text("ignored\n")
    return root


def files(root: Path) -> dict[str, bytes]:
    """Every file of the work tree outside .git, with its bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] != ".git" and path.is_file():
            out[str(rel)] = path.read_bytes()
    return out


def repo_state(root: Path) -> dict[str, Any]:
    """What the run must never change: HEAD, the refs, the index (its bytes)."""
    return {
        "head": git(root, "rev-parse", "HEAD"),
        "refs": git(root, "show-ref"),
        "index": hashlib.sha256((root / ".git" / "index").read_bytes()).hexdigest(),
        "staged": git(root, "diff", "--cached", "--name-only"),
    }


def fanout(items: list[Any], **spec: Any) -> dict[str, Any]:
    return plan_doc(
        {"id": "fan", "kind": "fanout",
         "fanout": {"over": items, "chain": ["fan.do"], "isolation": "worktree", **spec}},
        {"id": "fan.do", "kind": "agent", "prompt": "Do the item.", "model": "writer:agent"},
        name="worktrees",
        budget={"calls": 20},
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
def wt_settings(settings: Settings, repo: Path) -> Settings:
    writer = Endpoint(kind="command", argv=[sys.executable, str(WRITER)])
    return with_endpoint(settings, "writer", writer).model_copy(
        update={"workspace_roots": [repo]}  # the runs directory is outside every root
    )


@pytest.fixture
async def queue(client: Client, wt_settings: Settings) -> AsyncIterator[str]:
    name = f"test-{uuid.uuid4()}"
    async with running_worker(client, wt_settings, WorkerOptions(task_queue=name)):
        yield name


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


async def test_items_merge_in_item_order_and_land_on_the_files_only(
    client: Client, queue: str, repo: Path, wt_settings: Settings
) -> None:
    before = repo_state(repo)
    items = [
        # Item 0 finishes last: the merge still takes it first.
        {"sleep": 1.5, "read": ["notes.txt", "todo.txt", "secret.log"],
         "write": {"a.txt": "A\n", "shared.txt": "one\n2\n3\n4\n5\n6\n7\n8\n"}},
        {"sleep": 0.7, "write": {"b/b.txt": "B\n"}},
        {"write": {"c.txt": "C\n", "shared.txt": "1\n2\n3\n4\n5\n6\n7\neight\n"}},
    ]  # fmt: skip
    # concurrency 3: the items run at once (unset, a fan-out runs one item at a time).
    result = await run(client, queue, fanout(items, concurrency=3), workspace=str(repo))
    outputs = [json.loads(o) for o in result.outputs["fan"]]
    runs = wt_settings.runs_dir / result.run_id
    assert [Path(o["cwd"]) for o in outputs] == [
        (runs / "worktrees" / f"fan-{i}").resolve() for i in range(3)
    ]
    # The items saw the uncommitted work, not the ignored file.
    assert outputs[0]["saw"] == {
        "notes.txt": "draft, not committed\n", "todo.txt": "untracked\n", "secret.log": None,
    }  # fmt: skip
    assert (repo / "a.txt").read_text() == "A\n" and (repo / "b/b.txt").read_text() == "B\n"
    assert (repo / "shared.txt").read_text() == "one\n2\n3\n4\n5\n6\n7\neight\n"
    assert (repo / "notes.txt").read_text() == "draft, not committed\n"
    assert (repo / "secret.log").read_text() == "ignored\n"
    assert repo_state(repo) == before  # HEAD, refs and index untouched: files only

    events = trace(wt_settings.runs_dir, result.run_id)
    settled = [e["data"]["invocation"] for e in of_type(events, "settled")]
    assert settled.index("fan.do:2#1") < settled.index("fan.do:0#1")  # completion: 2 first
    (merged,) = of_type(events, "worktree.merged")
    assert merged["data"]["items"] == [0, 1, 2] and merged["data"]["landed"] == "apply"
    patches = of_type(events, "worktree.patch")
    for p in patches:  # each patch is kept in the run directory, its digest in history
        kept = runs / "worktrees" / f"fan-{p['data']['item']}.patch"
        assert hashlib.sha256(kept.read_bytes()).hexdigest() == p["data"]["sha256"]
    assert len(of_type(events, "worktree.created")) == 3
    # Every worktree is gone, and so is its registration in the repository.
    assert [p for p in (runs / "worktrees").iterdir() if p.is_dir()] == []
    assert git(repo, "worktree", "list").count("\n") == 1


async def test_a_conflict_names_item_1_and_leaves_the_workspace_as_it_was(
    client: Client, queue: str, repo: Path, wt_settings: Settings
) -> None:
    before, state = files(repo), repo_state(repo)
    # Completion order is 2, 1, 0; merged in that order (or reversed) item 0 would conflict.
    items = [
        {"sleep": 1.4, "write": {"x.txt": "zero\n"}},
        {"sleep": 0.7, "write": {"x.txt": "one\n"}},
        {"write": {"y.txt": "two\n"}},
    ]
    error = await failure(client, queue, fanout(items), workspace=str(repo))
    assert error.type == "worktree-merge-conflict"
    assert 'item 1 ({"sleep": 0.7, "write": {"x.txt": "one\\n"}})' in error.message, error.message
    assert "nothing was applied to the workspace" in error.message
    assert files(repo) == before and repo_state(repo) == state
    run_id = next(p.name for p in wt_settings.runs_dir.iterdir() if not p.name.startswith("."))
    events = trace(wt_settings.runs_dir, run_id)
    (conflict,) = of_type(events, "worktree.conflict")
    assert conflict["data"]["item"] == 1 and "x.txt" in conflict["data"]["detail"]
    assert of_type(events, "worktree.merged") == []


async def test_a_failed_join_merges_nothing(
    client: Client, queue: str, repo: Path, wt_settings: Settings
) -> None:
    before, state = files(repo), repo_state(repo)
    items = [{"write": {"y.txt": "y\n"}}, {"write": {"z.txt": "z\n"}, "fail": "boom"}]
    error = await failure(client, queue, fanout(items), workspace=str(repo))
    assert error.type == "join-unsatisfied" and "boom" in error.message
    assert files(repo) == before and repo_state(repo) == state
    run_id = next(p.name for p in wt_settings.runs_dir.iterdir() if not p.name.startswith("."))
    events = trace(wt_settings.runs_dir, run_id)
    assert [p["data"]["item"] for p in of_type(events, "worktree.patch")] == [0]
    assert of_type(events, "worktree.merged") == of_type(events, "worktree.conflict") == []
    assert git(repo, "worktree", "list").count("\n") == 1


async def test_a_workspace_outside_a_git_work_tree_is_refused_at_preflight(
    client: Client, queue: str, repo: Path, tmp_path: Path, wt_settings: Settings
) -> None:
    plain = repo.parent / "plain"
    plain.mkdir()
    roots = {"workspace_roots": [repo, plain]}
    name = f"test-{uuid.uuid4()}"
    async with running_worker(
        client, wt_settings.model_copy(update=roots), WorkerOptions(task_queue=name)
    ):
        error = await failure(client, name, fanout([{"write": {"a": "a"}}]), workspace=str(plain))
    assert error.type == "worktree-unavailable"
    assert "not in a git work tree" in error.message and "isolation: none" in error.message
    assert list(plain.iterdir()) == []


def stalling_git(bin_dir: Path, marker: Path, *, apply_first: bool) -> None:
    """A ``git`` ahead of the real one on the worker's PATH: the first time it is asked to land
    (``apply`` without ``--3way``) it writes its pid to ``marker`` and stalls, having applied
    the patch or not, so the test can SIGKILL the worker mid-land. Later calls pass through."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    bin_dir.mkdir()
    script = bin_dir / "git"
    land = f'"{real.stdout.strip()}" "$@" || exit $?\n' if apply_first else ""
    script.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" apply "*) case " $* " in *" --3way "*) ;; *)\n'
        f'  if [ ! -e "{marker}" ]; then\n'
        f"    {land}"
        f'    echo $$ > "{marker}.tmp" && mv "{marker}.tmp" "{marker}"; exec sleep 600\n'
        "  fi;; esac;; esac\n"
        f'exec "{real.stdout.strip()}" "$@"\n'
    )
    script.chmod(0o755)


@pytest.mark.parametrize("applied", [False, True], ids=["before-apply", "after-apply"])
async def test_a_worker_killed_while_landing_lands_exactly_once(
    client: Client,
    settings: Settings,
    server_address: str,
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    applied: bool,
) -> None:
    marker = tmp_path / "landing.pid"
    stalling_git(tmp_path / "bin", marker, apply_first=applied)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.writer]\nkind = "command"\nargv = ["{sys.executable}", "{WRITER}"]\n'
        f'[plans]\nworkspace_roots = ["{repo}"]\n'
    )
    items = [{"write": {"a.txt": "A\n"}}, {"append": {"shared.txt": "9\n"}}]
    queue = f"test-{uuid.uuid4()}"
    try:
        async with KilledWorker(settings, server_address, queue) as worker:
            handle = await client.start_workflow(
                PLAN_RUN,
                PlanRunInput(plan=fanout(items), workspace=str(repo)),
                id=f"wt-kill-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
                result_type=PlanRunResult,
                task_timeout=timedelta(seconds=2),
            )
            deadline = time.monotonic() + 60
            while not marker.exists():
                assert time.monotonic() < deadline, "the land never started"
                await asyncio.sleep(0.05)
            assert ((repo / "a.txt").exists()) is applied
            await worker.kill()
            os.kill(int(marker.read_text()), signal.SIGKILL)  # the stalled git, if still there
            await worker.restart()
            result: PlanRunResult = await asyncio.wait_for(handle.result(), 120)
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int(marker.read_text()), signal.SIGKILL)
    assert len(result.outputs["fan"]) == 2
    assert (repo / "a.txt").read_text() == "A\n"
    assert (repo / "shared.txt").read_text() == "".join(f"{n}\n" for n in range(1, 10))
    events = trace(settings.runs_dir, result.run_id)
    (merged,) = of_type(events, "worktree.merged")
    assert merged["data"]["landed"] == ("done" if applied else "apply")


async def test_an_items_file_checks_and_barrier_run_in_its_worktree(
    client: Client, queue: str, repo: Path, wt_settings: Settings
) -> None:
    """The item's worktree is the root of its declared writes' landed barrier and of its
    ``file_*`` ensures: the file is there, though nothing has landed in the workspace yet."""
    plan = fanout([{"write": {"out/one.md": "one\n"}}])
    plan["steps"][1] |= {
        "deliverable": "file",
        "artifacts": {"writes": ["out/one.md"]},
        "ensure": [{"file_exists": "out/one.md"}, {"file_contains": {"path": "out/one.md",
                                                                     "text": "one"}}],
    }  # fmt: skip
    result = await run(client, queue, plan, workspace=str(repo))
    assert json.loads(result.outputs["fan"][0])["cwd"].endswith("fan-0")
    assert (repo / "out" / "one.md").read_text() == "one\n"
    checked = of_type(trace(wt_settings.runs_dir, result.run_id), "ensure.checked")
    assert [e["data"]["holds"] for e in checked] == [True, True]


async def test_the_history_estimate_counts_the_git_activities(
    client: Client, queue: str, repo: Path
) -> None:
    """``plan.too_large`` is decided on an estimate: a worktree region's real history stays
    under it, and passes what the same region without isolation is estimated at."""
    plan = fanout([{} for _ in range(20)], concurrency=8)
    plan["steps"][1]["model"] = "sim:default"
    handle = await start(client, queue, plan, workspace=str(repo))
    await handle.result()
    real = len((await handle.fetch_history()).events)
    estimate = estimate_history(load_plan(plan)).events
    plan["steps"][0]["fanout"]["isolation"] = "none"
    assert estimate_history(load_plan(plan)).events < real <= estimate, real
