"""A worker SIGKILLed while a region branch's request is held: a new worker finishes the run
without re-running the branches that had settled (the fake's call-id log shows it); a call
retried after the kill is spent once in every ledger that covers it."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from temporalio.client import Client, WorkflowHandle

from activities.config import Settings
from tests.fakes import FakeProvider, Reply, Seen, sim_responder
from tests.worker_process import KilledWorker, declare_fake, start_worker
from workflows.call_options import CallOptions
from workflows.names import PLAN_RUN, QUERY_EVENTS, QUERY_STATUS
from workflows.plan.run_types import PlanEvent, PlanRunInput, PlanRunResult, PlanStatus

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

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


async def settled_branches(handle: WorkflowHandle) -> set[str]:
    trail = await handle.query(QUERY_EVENTS, 0, result_type=list[PlanEvent])
    return {
        e.data["invocation"].split(":")[1].split("#")[0]
        for e in trail
        if e.type == "settled" and e.data.get("ok")
    }


async def test_a_killed_worker_does_not_rerun_settled_branches(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\n'
    )
    held = threading.Event()  # only branch 2 waits: the others are answered and settle

    def responder(seen: Seen) -> Reply:
        if branch(seen.call_id) == "2":
            held.wait(timeout=120)
        return sim_responder(seen)

    fake.responder = responder
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
        # The answered branches settle (recorded in history); the held one does not.
        while (settled := await settled_branches(handle)) != {"0", "1", "3"}:
            assert time.monotonic() < deadline, settled
            await asyncio.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        await worker.wait()
        worker = await start_worker(settings, server_address, queue)
        held.set()
        result = await asyncio.wait_for(handle.result(), 90)
    finally:
        held.set()
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


SUBFLOW = {
    "schema": "ponder-plan/1",
    "name": "crash-subflow",
    "budget": {"calls": 1},
    "flows": {"one": {"steps": [
        {"id": "a", "kind": "agent", "prompt": "Only call.", "model": "local:default",
         "budget": {"calls": 1}},
    ]}},
    "steps": [{"id": "call", "kind": "run", "flow": "one", "budget": {"calls": 1}}],
}  # fmt: skip


async def test_a_call_retried_after_a_killed_worker_counts_once_in_every_ledger(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    # Every ledger holds exactly one call: a second spend would be an invariant violation.
    declare_fake(settings, fake.url)
    fake.hold_when = lambda seen: len(fake.seen) == 1  # the first request is held
    queue = f"test-{uuid.uuid4()}"
    async with KilledWorker(settings, server_address, queue) as worker:
        handle = await client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=SUBFLOW, calls=CallOptions(heartbeat_timeout_s=2)),
            id=f"plan-crash-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=PlanRunResult,
            task_timeout=timedelta(seconds=2),
        )
        try:
            assert await asyncio.to_thread(fake.arrived.wait, 60)
            await worker.kill_and_restart()
        finally:
            fake.resume()
        result = await asyncio.wait_for(handle.result(), 90)
        final = await handle.query(QUERY_STATUS, result_type=PlanStatus)
    assert len(fake.seen) == 2 and len({s.call_id for s in fake.seen}) == 1  # one call, retried
    assert result.calls == 1
    assert final.budget is not None and final.budget.calls_spent == 1
    assert {(ledger.owner, ledger.calls_spent) for ledger in final.ledgers} == {
        ("call", 1),
        ("call/a", 1),
    }
