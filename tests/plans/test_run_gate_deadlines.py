"""Human-gate deadlines and escalation (docs/plans.md, "Gate deadlines and escalation") through a
real PlanRun.

Deadlines are 1-2 s; escalation posts go to a real HTTP server in this process (the test's
fake), named by the worker's ``[notifiers.NAME]``, never by the plan.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from activities.config import Notifier, Settings
from tests.fakes import FakeProvider, Reply
from tests.plans.run_helpers import agent, events, failure, plan_doc, start, status, wait_state
from worker.worker import WorkerOptions, running_worker
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.limits import estimate_history
from workflows.plan.run_types import PlanRunResult, PlanStatus, ResolveGateInput, ResumeInput
from workflows.plan.validate import load_plan


def human(step_id: str, deps: list[str] | None = None, **gate: object) -> dict[str, object]:
    return {"id": step_id, "kind": "gate", "deps": deps or [], "gate": gate}


AFTER = {"id": "after", "kind": "pause", "pause": {"state": "HOLD", "resume_arg": "go"}}


@pytest.fixture
def hook() -> AsyncIterator[FakeProvider]:
    server = FakeProvider(lambda seen: Reply(status=204, body={}))
    yield server  # type: ignore[misc]
    server.close()


@pytest.fixture
async def queue(client: Client, settings: Settings, hook: FakeProvider) -> AsyncIterator[str]:
    """A worker declaring two notifiers: ``ops`` (the test's server) and ``down`` (a closed
    port: every post fails)."""
    notifiers = {
        "ops": Notifier(kind="webhook", url=f"{hook.url}/hook?team=ops", timeout_s=5),
        "down": Notifier(kind="webhook", url="http://127.0.0.1:9/hook", timeout_s=2),
    }
    settings = settings.model_copy(update={"notifiers": notifiers})
    task_queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=task_queue)):
        yield task_queue


async def until(handle: WorkflowHandle, check: object, timeout: float = 60) -> PlanStatus:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        current = await status(handle)
        if check(current):  # type: ignore[operator]
            return current
        assert loop.time() < deadline, f"still {current.state}"
        await asyncio.sleep(0.05)


def types(trail: list[object]) -> list[str]:
    return [e.type for e in trail]  # type: ignore[attr-defined]


async def test_a_default_approve_decides_at_the_deadline_and_a_late_decision_is_stale(
    client: Client, queue: str
) -> None:
    plan = plan_doc(human("ship", deadline=1000, default="approve"), {**AFTER, "deps": ["ship"]})
    handle = await start(client, queue, plan)
    waiting = await wait_state(handle, "awaiting_gate")
    pending = waiting.pending_gates[0]
    assert (pending.default, pending.escalated) == ("approve", False)
    assert pending.deadline_at is not None and pending.escalate_at is None
    # The default decides as a person would: the walk goes on to the pause.
    await wait_state(handle, "awaiting_input")
    late = ResolveGateInput(step="ship", decision="kill", token=pending.token)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(UPDATE_RESOLVE_GATE, late)
    assert "stale-gate-token" in str(refused.value.cause)
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"go": "yes"}))
    result: PlanRunResult = await handle.result()
    assert result.outputs["ship"] == "approve"
    trail = await events(handle)
    defaulted = next(e for e in trail if e.type == "gate.defaulted")
    assert defaulted.data["decided_by"] == "deadline" and defaulted.data["decision"] == "approve"
    decided = next(e for e in trail if e.type == "gate.decided")
    assert decided.data["decided_by"] == "deadline"
    assert decided.data["waited_ms"] >= 1000
    assert "gate.escalated" not in types(trail)
    # The refused late update left nothing in the history (the validator refused it).
    history = await handle.fetch_history()
    accepted = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert len(accepted) == 1  # the resume only


async def test_a_default_kill_fails_gate_deadline_expired_or_takes_on_kill(
    client: Client, queue: str
) -> None:
    expired = plan_doc(human("ship", deadline=1000, default="kill"))
    loop = asyncio.get_running_loop()
    began = loop.time()
    cause = await failure(client, queue, expired)
    assert cause.type == "gate-deadline-expired"
    assert "nobody decided within 1000 ms" in cause.message
    assert loop.time() - began < 30
    routed = plan_doc(
        agent("draft", "Draft it.", "d1"),
        human("ship", deps=["draft"], deadline=1000, default="kill", on_kill="cleanup"),
        agent("skipped", "Ship it.", "s1", deps=["ship"]),
        agent("cleanup", "Clean up.", "c1", deps=["draft"]),
    )
    handle = await start(client, queue, routed)
    result: PlanRunResult = await handle.result()
    assert result.outputs["ship"] == "kill" and result.outputs["cleanup"] == "c1"
    assert "skipped" not in result.outputs


async def timer_recorded(handle: WorkflowHandle, timeout: float = 60) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        history = await handle.fetch_history()
        if any(e.event_type == EventType.EVENT_TYPE_TIMER_STARTED for e in history.events):
            return
        assert loop.time() < deadline, "the escalation timer was never started"
        await asyncio.sleep(0.05)


async def test_an_early_decision_cancels_both_timers(client: Client, queue: str) -> None:
    plan = plan_doc(
        human("ship", deadline=20000, default="kill", escalate={"after_ms": 10000, "notify": "ops"})
    )
    handle = await start(client, queue, plan)
    waiting = await wait_state(handle, "awaiting_gate")
    # A query can be answered before the gate's first workflow task is recorded; a decision
    # in that same task would start and cancel the timer in one activation, which leaves no
    # timer events at all. Decide once the escalation timer is in the history.
    await timer_recorded(handle)
    token = waiting.pending_gates[0].token
    decision = ResolveGateInput(step="ship", decision="approve", token=token)
    await handle.execute_update(UPDATE_RESOLVE_GATE, decision)
    result: PlanRunResult = await handle.result()
    assert result.outputs["ship"] == "approve"
    trail = types(await events(handle))
    assert not {"gate.defaulted", "gate.escalated"} & set(trail)
    history = await handle.fetch_history()
    kinds = [e.event_type for e in history.events]
    assert kinds.count(EventType.EVENT_TYPE_TIMER_STARTED) == 1  # the escalation timer
    assert kinds.count(EventType.EVENT_TYPE_TIMER_CANCELED) == 1
    assert kinds.count(EventType.EVENT_TYPE_TIMER_FIRED) == 0


async def test_escalation_posts_to_the_workers_notifier_without_the_token(
    client: Client, queue: str, hook: FakeProvider
) -> None:
    # Status shows the flag only between the escalation and the deadline: 4 s, so that a loaded
    # worker's late workflow task (both timers landing in one activation) cannot skip it.
    plan = plan_doc(
        human(
            "ship", deadline=5000, default="approve", escalate={"after_ms": 1000, "notify": "ops"}
        )
    )
    handle = await start(client, queue, plan)
    escalated = await until(handle, lambda s: s.pending_gates and s.pending_gates[0].escalated)
    pending = escalated.pending_gates[0]
    assert (pending.notify, escalated.state) == ("ops", "awaiting_gate")
    result: PlanRunResult = await handle.result()
    assert result.outputs["ship"] == "approve"
    assert len(hook.seen) == 1
    post = hook.seen[0]
    assert post.path == "/hook?team=ops"
    assert post.body == {
        "run_id": handle.id,
        "step": "ship",
        "deadline_at": pending.deadline_at,
        "command": f"ponder gate approve|revise|kill {handle.id} ship",
    }
    assert pending.token not in str(post.body) and pending.token not in str(post.headers)
    trail = await events(handle)
    assert types(trail).index("gate.escalated") < types(trail).index("gate.defaulted")
    assert "gate.escalation_failed" not in types(trail)


async def test_a_failing_notifier_is_recorded_and_the_run_completes(
    client: Client, queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        human(
            "ship", deadline=1500, default="approve", escalate={"after_ms": 1000, "notify": "down"}
        ),
        agent("next", "Go on.", "n1", deps=["ship"]),
    )
    handle = await start(client, queue, plan)
    result: PlanRunResult = await handle.result()
    assert result.outputs["next"] == "n1"
    trail = await events(handle)
    failed = next(e for e in trail if e.type == "gate.escalation_failed")
    assert failed.data["notify"] == "down"
    assert "ConnectError" in failed.data["error"]
    assert "127.0.0.1:9" not in failed.data["error"]  # a webhook URL may be a secret
    # Recorded before the run closed, so the trace on disk has it too.
    assert types(trail).index("gate.escalation_failed") < types(trail).index("run.closed")
    on_disk = (Path(settings.runs_dir) / handle.id / "trace.jsonl").read_text()
    assert "gate.escalation_failed" in on_disk


async def test_an_unknown_notifier_is_refused_at_preflight(client: Client, queue: str) -> None:
    plan = plan_doc(
        agent("draft", "Draft it.", "d1"),
        human("ship", deps=["draft"], escalate={"after_ms": 1000, "notify": "pager"}),
    )
    handle = await start(client, queue, plan)
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "escalation-unroutable"
    assert "pager (gate ship)" in cause.message and "[notifiers.NAME]" in cause.message
    assert (await status(handle)).steps["draft"] == "pending"  # refused before anything ran


async def test_the_history_estimate_covers_gate_timers_and_posts(
    client: Client, queue: str
) -> None:
    """Each timed gate adds its timers and its escalation post to the history: the worst-case
    estimate ``plan.too_large`` is checked against counts them."""
    timed = {
        "deadline": 1100,
        "default": "approve",
        "escalate": {"after_ms": 1000, "notify": "ops"},
    }
    steps = [human("g0", **timed)]
    steps += [human(f"g{n}", deps=[f"g{n - 1}"], **timed) for n in range(1, 6)]
    plan = plan_doc(*steps)
    handle = await start(client, queue, plan)
    result: PlanRunResult = await handle.result()
    assert set(result.outputs.values()) == {"approve"}
    real = len((await handle.fetch_history()).events)
    assert real <= estimate_history(load_plan(plan)).events
