"""Gate deadlines and training pairs (docs/plans.md), through the real ``temporal`` binary:
gate deadlines, escalation and training pairs cannot make the shared worker post, write or wait
without bound.

Each case asserts the harness's three things: the hostile run ends with its code (or completes,
where capture and escalation are never outcomes) within a bounded time, a probe ``Ask`` on the
same worker completes within 10 s while it is processed, and the worker exits within 10 s of
SIGTERM (``shared_worker``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import dumps, shared_worker
from workflows.names import PLAN_RUN
from workflows.plan.run_types import PlanRunInput
from workflows.plan.training import MAX_LINE_BYTES, safe_name


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def silent_server() -> AsyncIterator[int]:
    """A webhook that accepts the connection and never answers: each post waits its timeout."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()


async def test_escalation_and_capture_stay_bounded_on_a_shared_worker(
    client: Client, settings: Settings, server_address: str, tmp_path: Path
) -> None:
    training = tmp_path / "training"
    async with silent_server() as port:
        toml = (
            f'[ponder]\ntraining_dir = "{training}"\n\n'
            f'[notifiers.silent]\nkind = "webhook"\nurl = "http://127.0.0.1:{port}/"\n'
            "timeout_s = 1\n"
        )
        async with shared_worker(client, settings, server_address, toml=toml) as worker:
            # A gate escalating to a notifier the worker does not declare: refused at preflight.
            unroutable = _id("p-notify")
            gate = {"escalate": {"after_ms": 1000, "notify": "http://evil.example/"}}
            plan = {"schema": "ponder-plan/1", "name": "h", "steps": [
                {"id": "g", "kind": "gate", "gate": {"escalate": {"after_ms": 1000,
                                                              "notify": "pager"}}}]}  # fmt: skip
            await worker.start(PLAN_RUN, unroutable, dumps({"plan": plan}))
            # A URL where a name belongs never validates.
            as_url = _id("p-url")
            bad = {**plan, "steps": [{"id": "g", "kind": "gate", "gate": gate}]}
            await worker.start(PLAN_RUN, as_url, dumps({"plan": bad}))
            # A webhook that never answers, and a deadline: the default decides on time; each
            # post waits its timeout; the run's end waits for the post (bounded), then closes.
            silent = _id("p-silent")
            timed = {"deadline": 1500, "default": "approve",
                     "escalate": {"after_ms": 1000, "notify": "silent"}}  # fmt: skip
            waits = {**plan, "steps": [{"id": "g", "kind": "gate", "gate": timed}]}
            await worker.start(PLAN_RUN, silent, dumps({"plan": waits}))
            # Training pairs over a ~900,000-character prompt and a 300,000-character output, a
            # step id made of path characters: the record is truncated, bounded, in its place.
            # (Started by the client: one argument to the temporal binary is at most 128 KiB.)
            huge = _id("p-huge")
            step = {"id": "..:..x", "kind": "agent", "model": "sim:default",
                    "prompt": "${input.big}", "x-sim": {"outputs": ["o" * 300_000]}}  # fmt: skip
            pairs = {"schema": "ponder-plan/1", "name": "../../etc", "training_pairs": True,
                     "steps": [step]}  # fmt: skip
            big = PlanRunInput(plan=pairs, args={"big": "p" * 900_000})
            await client.start_workflow(PLAN_RUN, big, id=huge, task_queue=worker.queue)

            await worker.probe()
            assert (await worker.failure(unroutable)).type == "escalation-unroutable"
            error = await worker.failure(as_url)
            assert error.type == "plan-invalid" and "steps[0].gate.escalate.notify" in error.message
            await worker.probe()
            await asyncio.wait_for(worker.handle(huge).result(), 60)
            await asyncio.wait_for(worker.handle(silent).result(), 60)
            await worker.probe()

    trace = (settings.runs_dir / silent / "trace.jsonl").read_text()
    kinds = [json.loads(line)["type"] for line in trace.splitlines()]
    assert kinds.index("gate.defaulted") < kinds.index("gate.escalation_failed")
    assert kinds[-1] == "run.closed" and f"127.0.0.1:{port}" not in trace

    (written,) = list((training / safe_name("../../etc")).glob("*/*.jsonl"))
    assert written.parent.parent.parent == training and written.parent.name == huge
    assert written.name == f"{safe_name('..:..x')}.jsonl"
    raw = written.read_bytes()
    assert len(raw) <= MAX_LINE_BYTES
    record = json.loads(raw)
    assert record["truncated"]["input_chars"] >= 900_000
    assert record["truncated"]["output_chars"] == 300_000
