"""Consumer steps and checkpoints (docs/plans.md), through the real ``temporal`` binary: what a
consumer's ``step_done``, a ``checkpoint`` or a ``revert`` carries is refused with its code before
it enters history (update) or as ``control.refused`` (signal), and never stalls the shared worker.

The harness's three things: the hostile run ends (here: answered, then completed) within a
bounded time, a probe ``Ask`` completes within 10 s while it is processed, and the worker exits
within 10 s of SIGTERM (``shared_worker``).
"""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from tests.plans.test_run_consumer import settled_history
from workflows.names import PLAN_RUN, QUERY_STATUS
from workflows.plan.run_types import PlanStatus

PLAN = {
    "schema": "ponder-plan/1",
    "name": "hostile-consumer",
    "steps": [
        {"id": "a", "kind": "agent", "prompt": "A.", "model": "sim:default", "checkpoint": "a"},
        {"id": "b", "kind": "agent", "prompt": "B.", "dispatch": "consumer", "deps": ["a"]},
    ],
}


async def test_hostile_answers_and_labels_are_refused_and_the_worker_keeps_serving(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        run_id = f"p-consumer-{uuid.uuid4().hex[:8]}"
        await worker.start(PLAN_RUN, run_id, dumps({"plan": PLAN}))
        handle = worker.handle(run_id)
        for _ in range(600):
            shown: PlanStatus = await handle.query(QUERY_STATUS, result_type=PlanStatus)
            if shown.issuances:
                break
            await asyncio.sleep(0.05)
        token = shown.issuances[0].token
        before = await settled_history(handle)  # once the wait's trace write has landed
        deep = "[" * 20_000 + "]" * 20_000  # JSON nested past any parser's recursion
        head = f'{{"step":"b","token":"{token}","result":'
        for text in (head + '{"output":' + deep + "}}", head + deep + "}"):
            status, output = await worker.update(run_id, "step_done", text)
            assert status != 0, output  # refused by the SDK's decoding or the validator
        hostile = [
            ({"step": "b", "token": token, "result": {"output": "x", "usage": {"calls": 9}}},
             "invalid-result"),
            ({"step": "b", "token": token, "result": {"output": "x", "usage": {"usd": 1e308}}},
             "invalid-result"),
            ({"step": "b", "token": token, "result": {"failure": ["not", "text"]}},
             "invalid-result"),
            ({"step": ["b"], "token": token, "result": {"output": "x"}}, "input.invalid"),
            ({"step": "a", "token": token, "result": {"output": "x"}}, "unknown-step"),
            ({"step": "b", "token": "x" * 100_000, "result": {"output": "x"}},
             "stale-dispatch-token"),
        ]  # fmt: skip
        for body, code in hostile:
            status, output = await worker.update(run_id, "step_done", dumps(body))
            assert status != 0, output
            assert code is None or code in output, (code, output[-400:])
        for name, body, code in (
            ("revert", {"label": "x" * 10_000}, "invalid-label"),
            ("checkpoint", {"label": "../../etc"}, "invalid-label"),
            ("revert", {"label": 7}, "input.invalid"),
        ):
            status, output = await worker.update(run_id, name, dumps(body))
            assert status != 0 and code in output, (name, output[-400:])
        await worker.probe()
        assert len((await handle.fetch_history()).events) == before  # nothing entered history
        # The signal forms: each refusal recorded, the run still waiting.
        await worker.signal(run_id, "step_done_signal", dumps({"step": "b", "token": token}))
        await worker.signal(run_id, "revert_signal", dumps({"label": "nope"}))
        status, output = await worker.update(
            run_id, "step_done", dumps({"step": "b", "token": token, "result": {"output": "ok"}})
        )
        assert status == 0, output
        result = await asyncio.wait_for(handle.result(), 30)
        assert result["outputs"]["b"] == "ok"
        refused = (await handle.query(QUERY_STATUS, result_type=PlanStatus)).refused
        assert [r.split(":")[0] for r in refused] == ["step_done", "revert"]
