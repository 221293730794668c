"""Hostile worktree fan-outs (docs/plans.md, "Worktree fan-out"), sent through the real ``temporal``
binary to a real worker process: a repository whose configuration would run programs that hang
(hooks, an fsmonitor daemon), an item's agent that plants a git directory of its own (a clean filter
in its configuration, attributes applying it, the worktree's ``.git`` pointed at it), a workspace
whose ``.git`` points into itself, a workspace that is no git work tree, and one outside the
worker's roots. Each run ends (completed, or with its code) within bounds, nothing the repository or
the agent names runs, a probe ``Ask`` on the same worker completes meanwhile, and the worker still
stops within 10 s of SIGTERM (the harness asserts it on leaving the block).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from tests.plans.test_run_worktrees import WRITER, files, git, make_repo
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanFailureDetail, PlanRunResult

HOOKS = ("post-checkout", "pre-commit", "post-index-change", "reference-transaction")


def _plan(name: str) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": name,
        "budget": {"calls": 3},
        "steps": [
            {"id": "fan", "kind": "fanout",
             "fanout": {"over": [1, 2, 3], "chain": ["fan.one"], "isolation": "worktree"}},
            {"id": "fan.one", "kind": "agent", "prompt": "One.", "model": "sim:default"},
        ],
    }  # fmt: skip


def _planting(name: str, marker: Path) -> dict[str, Any]:
    """A fan-out whose first item's agent (``worktree_writer.py``) plants a git directory with
    a clean filter that marks ``marker`` and points its worktree's ``.git`` at it."""
    planted = {
        "evilgit/HEAD": "ref: refs/heads/main\n",
        "evilgit/objects/keep": "",
        "evilgit/refs/heads/keep": "",
        "evilgit/config": "[core]\n\trepositoryformatversion = 0\n"
        '[filter "x"]\n\tclean = sh evil.sh\n',
        "evil.sh": f"touch {marker}\ncat\n",
        ".gitattributes": "* filter=x\n",
        ".git": "gitdir: evilgit\n",
    }
    plan = _plan(name)
    plan["steps"][0]["fanout"]["over"] = [{"write": planted}, {"write": {"ok.txt": "ok\n"}}]
    plan["steps"][1]["model"] = "writer:agent"
    return plan


def trapped_repo(root: Path, marker: Path) -> Path:
    """A repository whose hooks and fsmonitor would each mark ``marker`` and hang 10 minutes."""
    repo = make_repo(root)
    trap = root.parent / "trap.sh"
    trap.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexec sleep 600\n')
    trap.chmod(0o755)
    hooks = root.parent / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        for where in (hooks, repo / ".git" / "hooks"):
            (where / name).symlink_to(trap)
    git(repo, "config", "core.hooksPath", str(hooks))
    git(repo, "config", "core.fsmonitor", str(trap))
    return repo


async def test_hostile_worktree_runs_end_in_bounds_while_the_worker_serves(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    marker = tmp_path / "trap-ran"
    repo = trapped_repo(tmp_path / "repo", marker)
    plain = tmp_path / "plain"
    plain.mkdir()
    planted = tmp_path / "filter-ran"
    target = make_repo(tmp_path / "target")
    before = files(target)
    inward = make_repo(tmp_path / "inward")
    shutil.move(inward / ".git", inward / "evilgit")
    (inward / ".git").write_text("gitdir: evilgit\n")
    roots = ", ".join(f'"{p}"' for p in (repo, plain, target, inward))
    toml = (
        f'[providers.writer]\nkind = "command"\nargv = ["{sys.executable}", "{WRITER}"]\n'
        f"[plans]\nworkspace_roots = [{roots}]\n"
    )
    runs = {
        "wt-trapped": {"plan": _plan("t1"), "workspace": str(repo)},
        "wt-plain": {"plan": _plan("t2"), "workspace": str(plain)},
        "wt-outside": {"plan": _plan("t3"), "workspace": str(tmp_path)},
        "wt-planted": {"plan": _planting("t4", planted), "workspace": str(target)},
        "wt-inward": {"plan": _plan("t5"), "workspace": str(inward)},
    }
    async with shared_worker(client, settings, server_address, toml=toml) as worker:
        for run_id, run_input in runs.items():
            await worker.start(PLAN_RUN, run_id, dumps(run_input))
        probe = asyncio.create_task(worker.probe())
        began = time.monotonic()
        handle = worker.client.get_workflow_handle("wt-trapped", result_type=PlanRunResult)
        result: PlanRunResult = await asyncio.wait_for(handle.result(), 60)
        fan = result.outputs["fan"]
        assert isinstance(fan, list) and len(fan) == 3
        plain_error = await worker.failure("wt-plain", within=30)
        assert plain_error.type == "worktree-unavailable"
        assert "not in a git work tree" in plain_error.message
        outside = await worker.failure("wt-outside", within=30)
        assert outside.type == "artifact-path-escapes-root"
        tampered = await worker.failure("wt-planted", within=30)
        assert tampered.type == "worktree-unavailable", tampered
        assert PlanFailureDetail.of(tampered.details).cause == "worktree.tampered"
        assert "item 0" in tampered.message and "no longer points" in tampered.message
        inward_error = await worker.failure("wt-inward", within=30)
        assert inward_error.type == "worktree-unavailable"
        assert "inside the work tree itself" in inward_error.message
        assert await probe < 10
        assert time.monotonic() - began < 60
    assert not marker.exists(), marker.read_text()  # no hook, no fsmonitor ran
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not planted.exists()  # the agent's filter never ran
    assert files(target) == before  # nothing landed
    assert git(target, "worktree", "list").count("\n") == 1
