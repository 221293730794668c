"""A worker SIGKILLed while a region branch's request is held: a new worker finishes the run
without re-running the branches that had settled (the fake's call-id log shows it)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections import Counter
from datetime import timedelta

from temporalio.client import Client

from activities.config import Settings
from tests.fakes import FakeProvider
from tests.worker_process import start_worker
from workflows.call_options import CallOptions
from workflows.names import PLAN_RUN, QUERY_EVENTS
from workflows.plan.run_types import PlanEvent, PlanRunInput, PlanRunResult

PLAN = {
    "schema": "ponder-plan/1",
    "name": "crash",
    "budget": {"calls": 4},
    "steps": [
        {"id": "fan", "kind": "fanout",
         "fanout": {"over": ["a", "b", "c", "d"], "chain": ["fan.one"], "concurrency": 4}},
        {"id": "fan.one", "kind": "agent", "prompt": "One item.", "model": "local:default"},
    ],
}  # fmt: skip


def branch(call_id: str) -> str:
    return call_id.split("/")[2]  # run/phase/index/attempt: the item index


async def test_a_killed_worker_does_not_rerun_settled_branches(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\n'
    )
    fake.hold_when = lambda seen: branch(seen.call_id) == "2"
    queue = f"test-{uuid.uuid4()}"
    worker = await start_worker(settings, server_address, queue)
    handle = await client.start_workflow(
        PLAN_RUN,
        PlanRunInput(plan=PLAN, calls=CallOptions(heartbeat_timeout_s=2)),
        id=f"plan-crash-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=PlanRunResult,
        task_timeout=timedelta(seconds=2),
    )
    try:
        deadline = time.monotonic() + 60
        while {branch(s.call_id) for s in fake.seen} != {"0", "1", "2", "3"}:
            assert time.monotonic() < deadline, [s.call_id for s in fake.seen]
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # what was answered is recorded; the rest is held
        trail = await handle.query(QUERY_EVENTS, 0, result_type=list[PlanEvent])
        settled = {
            e.data["invocation"].split(":")[1].split("#")[0]
            for e in trail
            if e.type == "settled" and e.data.get("ok")
        }
        worker.send_signal(signal.SIGKILL)
        await worker.wait()
        worker = await start_worker(settings, server_address, queue)
        fake.resume()
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        fake.resume()
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
            await worker.wait()
    assert len(result.outputs["fan"]) == 4 and all(result.outputs["fan"])
    per_branch = Counter(branch(s.call_id) for s in fake.seen)
    assert settled and "2" not in settled  # some branches had settled; the held one had not
    assert all(per_branch[b] == 1 for b in settled)  # settled branches never ran again
    repeated = {b for b, n in per_branch.items() if n > 1}
    assert "2" in repeated and repeated.isdisjoint(settled)  # the held request ran again
    assert result.calls == 4  # one logical call per branch, billed once
