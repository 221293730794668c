"""Where ponder's plan interpreter matches the reference interpreter's behaviour.

Each test runs a plan through ``PlanRun`` on the real dev server; docs/plans.md, "Differences
from the reference interpreter", lists what ponder keeps different, and why.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, openai_completion
from tests.plans.run_helpers import agent, events, plan_doc, run, start, trace
from worker.worker import WorkerOptions, running_worker
from workflows.plan.run_types import PlanRunResult


def gate(step_id: str, *outputs: str, **fields: object) -> dict[str, object]:
    return agent(step_id, "Review ${steps.code.output}.", *outputs, kind="gate", **fields)


async def test_an_unparseable_verdict_takes_the_terminal_route(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        agent("code", "Write it.", "v1"),
        gate("qe", "I could not decide.", deps=["code"], fail_route="terminal:abandon"),
        agent("after", "never runs", deps=["qe"]),
    )
    handle = await start(client, worker_queue, plan)
    result: PlanRunResult = await handle.result()
    assert result.route == "abandon" and "after" not in result.outputs
    closed = trace(settings.runs_dir, handle.id)[-1]
    # Ours closes the trace on every outcome, naming the route (the reference writes none).
    assert closed["type"] == "run.closed" and closed["data"]["route"] == "abandon"


@pytest.fixture
async def fake_queue(client: Client, settings: Settings, fake: FakeProvider) -> AsyncIterator[str]:
    settings = with_endpoint(settings, "fake", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


async def test_a_redo_gives_the_route_step_its_previous_output_as_upstream(
    client: Client, fake_queue: str, fake: FakeProvider
) -> None:
    fake.replies = [
        Reply(body=openai_completion(text))
        for text in ("v1", "misses the empty case\nGATE: FAIL", "v2", "fine\nGATE: PASS")
    ]
    plan = plan_doc(
        agent("spec", "Specify it.", "the spec"),
        agent("code", "Write it.", model="fake:m", deps=["spec"]),
        gate("qe", model="fake:m", deps=["code"], fail_route="code", max_redos=1),
    )
    result = await run(client, fake_queue, plan)
    assert result.outputs["code"] == "v2"
    sent = [
        next(m["content"] for m in s.body["messages"] if m["role"] == "user") for s in fake.seen
    ]
    first, redo = sent[0], sent[2]
    assert "Upstream value:\nthe spec" in first
    assert "Upstream value (your previous output; gate qe asked for a redo):\nv1" in redo
    assert "the spec" not in redo  # the redo's upstream is its own output, as the reference's


async def test_region_branches_are_caused_by_the_regions_deps(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        agent("topics", "List them.", "listed"),
        {
            "id": "fan",
            "kind": "fanout",
            "deps": ["topics"],
            "fanout": {"over": ["a", "b"], "chain": ["fan.draft", "fan.edit"], "concurrency": 2},
        },
        agent("fan.draft", "Draft it."),
        agent("fan.edit", "Edit it."),
    )
    handle = await start(client, worker_queue, plan)
    await handle.result()
    trail = await events(handle)
    settled = {
        e.data["invocation"]: e.seq for e in trail if e.type == "settled" and "invocation" in e.data
    }
    dispatched = {e.data["invocation"]: e.caused_by for e in trail if e.type == "dispatched"}
    topics = settled["topics#1"]
    assert dispatched["fan.draft:0#1"] == dispatched["fan.draft:1#1"] == [topics]
    for item in (0, 1):  # and a later member by the member before it in its own branch
        assert dispatched[f"fan.edit:{item}#1"] == [topics, settled[f"fan.draft:{item}#1"]]


async def test_a_fanout_without_max_fanout_or_concurrency_runs_one_item_at_a_time(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        {"id": "fan", "kind": "fanout", "fanout": {"over": ["a", "b", "c"], "chain": ["fan.one"]}},
        agent("fan.one", "Handle it."),
    )
    handle = await start(client, worker_queue, plan)
    await handle.result()
    order = [
        (e.type, e.data["invocation"])
        for e in await events(handle)
        if e.type in ("dispatched", "settled")
    ]
    assert order == [
        (kind, f"fan.one:{i}#1") for i in range(3) for kind in ("dispatched", "settled")
    ]


ATTEMPT_AGENT = """
import os, sys
sys.stdin.read()
attempt = os.environ["PONDER_ATTEMPT"]
if attempt == "1":
    sys.exit("the first attempt fails")
print("attempt=" + attempt)
"""


async def test_ponder_attempt_is_the_traces_attempt(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(ATTEMPT_AGENT)
    endpoint = Endpoint(kind="command", argv=[sys.executable, str(script)])
    queue = f"test-{uuid.uuid4()}"
    plan = plan_doc(
        agent(
            "a", "Go.", model="counter:agent", idempotent=True,
            retry={"max_attempts": 2, "on": ["transport"]},
        )
    )  # fmt: skip
    async with running_worker(
        client, with_endpoint(settings, "counter", endpoint), WorkerOptions(task_queue=queue)
    ):
        handle = await start(client, queue, plan)
        result: PlanRunResult = await handle.result()
        trail = await events(handle)
    assert result.outputs["a"].strip() == "attempt=2"
    assert [e.data["attempt"] for e in trail if e.type == "dispatched"] == [1, 2]
