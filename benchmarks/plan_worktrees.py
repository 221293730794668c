"""What worktree isolation costs per item: a 50-item region on a small git repository.

On a fresh embedded server the real worker runs the same one-region plan twice per round, with
``isolation: none`` and ``isolation: worktree``, over a small repository (40 tracked files, an
uncommitted change and an untracked file, as a workspace usually is). Two agents: ``sim`` (the
items change nothing, so this is git's fixed cost: the base, each item's worktree add and
finish, the merge, the land) and a command agent that writes one file per item (each item's
patch is real and the land applies them all). "Worktree cost per item" is the difference in
wall time divided by the items; the run's own history gives each git activity's time
(scheduled to completed) and the events and bytes isolation adds per item. Medians of
``--rounds`` interleaved rounds. Measures, never asserts.

    python -m benchmarks.plan_worktrees [--items 50] [--rounds 3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from activities.config import Endpoint, Settings, load_settings
from client.connect import connect
from client.embedded import EmbeddedServer
from worker.worker import WorkerOptions, running_worker
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput, PlanRunResult

__all__ = ["region_plan"]

SIM = "sim:default,latency=0"
WRITER = "writer:agent"
WRITE_ONE = 'cat > /dev/null; echo "item $PONDER_ITEM" > "out/item-$PONDER_ITEM.txt"; echo done'


def region_plan(items: int, concurrency: int, *, isolation: str, model: str) -> dict[str, Any]:
    return {
        "schema": "ponder-plan/1",
        "name": f"worktrees-{items}",
        "budget": {"calls": items},
        "steps": [
            {
                "id": "fan",
                "kind": "fanout",
                "fanout": {
                    "over": list(range(items)),
                    "chain": ["fan.one"],
                    "concurrency": concurrency,
                    "isolation": isolation,
                },
            },
            {"id": "fan.one", "kind": "agent", "model": model, "prompt": "One item."},
        ],
    }


def make_repo(root: Path) -> Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env |= {"GIT_COMMITTER_EMAIL": "b@b"}
    root.mkdir(parents=True)
    for n in range(40):
        sub = root / f"pkg{n % 5}"
        sub.mkdir(exist_ok=True)
        (sub / f"mod{n}.py").write_text("".join(f"line {k} of module {n}\n" for k in range(50)))
    (root / "out").mkdir()
    (root / "out" / ".keep").write_text("")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(root), *args], env=env, check=True)
    (root / "pkg0" / "mod0.py").write_text("uncommitted\n")
    (root / "notes.txt").write_text("untracked\n")
    return root


def git_times(events: list[Any]) -> dict[str, list[float]]:
    """Each activity type's durations (ms, scheduled to completed) in the history."""
    scheduled: dict[int, tuple[str, float]] = {}
    out: dict[str, list[float]] = defaultdict(list)
    for event in events:
        at = event.event_time.ToDatetime().timestamp()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, at)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            sid = event.activity_task_completed_event_attributes.scheduled_event_id
            name, began = scheduled[sid]
            out[name].append((at - began) * 1000)
    return out


async def run_once(
    client: Client, queue: str, repo: Path, plan: dict[str, Any]
) -> tuple[float, WorkflowHandle]:
    run_id = f"wt-{uuid.uuid4().hex[:8]}"
    began = time.perf_counter()
    handle = await client.start_workflow(
        PLAN_RUN,
        PlanRunInput(plan=plan, run_id=run_id, workspace=str(repo)),
        id=run_id,
        task_queue=queue,
        result_type=PlanRunResult,
    )
    await handle.result()
    return time.perf_counter() - began, handle


async def measure(
    client: Client, queue: str, repo: Path, items: int, concurrency: int, rounds: int, model: str
) -> None:
    walls: dict[str, list[float]] = {"none": [], "worktree": []}
    history: dict[str, tuple[int, int]] = {}
    activity: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        for isolation in ("none", "worktree"):
            plan = region_plan(items, concurrency, isolation=isolation, model=model)
            seconds, handle = await run_once(client, queue, repo, plan)
            subprocess.run(["git", "-C", str(repo), "clean", "-qfd", "out"], check=True)
            walls[isolation].append(seconds)
            events = list((await handle.fetch_history()).events)
            history[isolation] = (len(events), sum(e.ByteSize() for e in events))
            if isolation == "worktree":
                for name, times in git_times(events).items():
                    if name.startswith("plan_worktree_"):
                        activity[name] += times
    none, isolated = statistics.median(walls["none"]), statistics.median(walls["worktree"])
    added_events = (history["worktree"][0] - history["none"][0]) / items
    added_bytes = (history["worktree"][1] - history["none"][1]) / items
    agent = "sim (empty patches)" if model == SIM else "a command agent writing one file each"
    print(
        f"{items} items at concurrency {concurrency}, {agent}: isolation none {none:.2f} s, "
        f"worktree {isolated:.2f} s -> worktree cost {(isolated - none) * 1000 / items:.1f} "
        f"ms/item (rounds {', '.join(f'{w:.2f}' for w in walls['worktree'])}); history "
        f"+{added_events:.1f} events and +{added_bytes:.0f} B per item",
        flush=True,
    )
    for name in sorted(activity):
        times = activity[name]
        print(
            f"  {name}: median {statistics.median(times):.0f} ms, max {max(times):.0f} ms "
            f"over {len(times)}",
            flush=True,
        )


async def main(items: int, concurrency: int, rounds: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="ponder-bench-"))
    home = scratch / "home"  # beside the workspace: ponder's home is never inside one
    repo = make_repo(scratch / "repo")
    settings: Settings = load_settings(home=str(home))
    writer = Endpoint(kind="command", argv=["/bin/sh", "-c", WRITE_ONE])
    settings = settings.model_copy(
        update={
            "providers": {**settings.providers, "writer": writer},
            "workspace_roots": [repo],
        }
    )
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    async with EmbeddedServer(home).lease() as info:
        client = await connect(settings, info.address)
        queue = f"bench-{uuid.uuid4()}"
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            warm = region_plan(4, 4, isolation="worktree", model=SIM)
            await run_once(client, queue, repo, warm)  # imports, the sandbox, git's caches
            for model in (SIM, WRITER):
                await measure(client, queue, repo, items, concurrency, rounds, model)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    options = parser.parse_args()
    if options.smoke:
        options.items, options.concurrency, options.rounds = 4, 4, 1
    asyncio.run(main(options.items, options.concurrency, options.rounds))
