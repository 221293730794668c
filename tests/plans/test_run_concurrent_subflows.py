"""Sub-flows (``run`` steps) in flight beside other steps under a plan's ``concurrency``,
through a real worker.

The fake provider (a real HTTP server) holds the calls it receives, so a test sees what is in
flight at once: a body's child beside an independent agent step; a run whose budget fits two
calls never has a third in flight, the body's child waits ``awaiting_budget`` once the two
have settled, and the ledger never shows more spent than its limit; a human gate in a body
waits while a sibling runs, and the run still shows the wait once the sibling settles (and
while a second body's gate is still open after the first is decided). Histories replay.
"""

from __future__ import annotations

import asyncio

from temporalio.client import Client

from activities.config import Settings
from tests.fakes import FakeProvider
from tests.plans import held_calls
from tests.plans.held_calls import fake_agent, holding, in_flight, order, replays
from tests.plans.run_helpers import (
    agent,
    ended_with,
    events,
    plan_doc,
    start,
    status,
    wait_state,
)
from workflows.names import UPDATE_EXTEND_BUDGET, UPDATE_RESOLVE_GATE, UPDATE_REVERT
from workflows.plan.activation import overlaps, reads
from workflows.plan.checkpoints import RevertInput
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanRunResult, ResolveGateInput
from workflows.plan.validate import load_plan

fake_queue = held_calls.fake_queue


async def test_a_subflow_runs_beside_an_independent_step(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        {"id": "r", "kind": "run", "flow": "two"},
        agent("join", "Join ${steps.a.output} and ${steps.r.output}.", "joined"),
        flows={"two": {"steps": [fake_agent("x"), fake_agent("y", deps=["x"])],
                       "output": "${steps.y.output}"}},
        concurrency=2,
    )  # fmt: skip
    with holding(fake):
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)  # walked one at a time, r/x would wait for a's answer
        held = await status(handle)
        assert (held.steps["a"], held.steps["r"], held.steps["r/x"]) == ("running",) * 3
        assert held.steps["join"] == "pending"
    result: PlanRunResult = await handle.result()
    assert result.outputs["join"] == "joined" and result.calls == 4
    seen = order(await events(handle))
    first_settled = next(i for i, (kind, _) in enumerate(seen) if kind == "settled")
    assert {s for _, s in seen[:first_settled]} == {"a", "r/x"}
    join_at = seen.index(("dispatched", "join"))  # join reads both: it waited for both
    assert {("settled", "a"), ("settled", "r/y")} <= set(seen[:join_at])
    await replays(handle, settings)


async def test_a_subflow_beside_others_never_spends_past_the_budget(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        fake_agent("b"),
        {"id": "r", "kind": "run", "flow": "one"},
        flows={"one": {"steps": [fake_agent("x")]}},
        concurrency=3,
        budget={"calls": 2},
    )
    with holding(fake):
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)
        held = await status(handle)
        assert held.steps["r/x"] == "pending"  # two calls are reserved: the third does not fit
        assert held.steps["r"] == "running"  # the body started: its child waits to fit
        assert held.budget is not None and held.budget.calls_spent <= 2
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.step == "r/x" and paused.budget is not None
    assert (paused.budget.calls_spent, paused.budget.calls_limit) == (2, 2)
    assert len(fake.seen) == 2
    await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3))
    result: PlanRunResult = await handle.result()
    assert sorted(result.outputs) == ["a", "b", "r", "r/x"] and len(fake.seen) == 3
    assert result.calls == 3
    await replays(handle, settings)


async def test_a_gate_in_a_subflow_waits_while_a_sibling_runs(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        {"id": "r", "kind": "run", "flow": "gated"},
        flows={"gated": {"steps": [
            {"id": "g", "kind": "gate", "gate": {}},
            agent("after", "After.", "done", deps=["g"]),
        ], "output": "${steps.after.output}"}},
        concurrency=2,
    )  # fmt: skip
    with holding(fake):
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 1)
        waiting = await wait_state(handle, "awaiting_gate")
        assert [g.step for g in waiting.pending_gates] == ["r/g"]
        assert waiting.steps["a"] == "running"  # the gate opened while a was in flight
    while (await status(handle)).steps["a"] != "settled":
        await asyncio.sleep(0.05)
    after = await status(handle)
    assert after.state == "awaiting_gate"  # a settling does not end the gate's wait
    assert after.steps["r/after"] == "pending"
    token = after.pending_gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="r/g", decision="approve", token=token)
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"] == "done" and result.outputs["a"]
    await replays(handle, settings)


async def test_two_gated_subflows_wait_at_once_and_each_decision_ends_its_own_wait(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    gated = {"steps": [{"id": "g", "kind": "gate", "gate": {}}, agent("w", "W.", "w")],
             "output": "${steps.w.output}"}  # fmt: skip
    plan = plan_doc(
        {"id": "r1", "kind": "run", "flow": "gated"},
        {"id": "r2", "kind": "run", "flow": "gated"},
        flows={"gated": gated},
        concurrency=2,
    )
    handle = await start(client, worker_queue, plan)
    for _ in range(200):
        both = await status(handle)
        if len(both.pending_gates) == 2:
            break
        await asyncio.sleep(0.05)
    assert sorted(g.step for g in both.pending_gates) == ["r1/g", "r2/g"]
    tokens = {g.step: g.token for g in both.pending_gates}
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="r1/g", decision="approve", token=tokens["r1/g"])
    )
    for _ in range(200):
        one = await status(handle)
        if one.steps["r1"] == "settled":
            break
        await asyncio.sleep(0.05)
    assert one.steps["r1"] == "settled" and one.state == "awaiting_gate"  # r2's wait is shown
    assert one.waiting_since is not None
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="r2/g", decision="approve", token=tokens["r2/g"])
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs["r1"] == result.outputs["r2"] == "w"
    done = await status(handle)
    assert done.state == "completed" and done.waiting_since is None
    await replays(handle, settings)


# --- pure rules -----------------------------------------------------------------------------


def test_a_run_step_reads_its_with_and_when_and_overlaps_only_when_allowed() -> None:
    plan = load_plan(
        plan_doc(
            agent("a", "A."),
            agent("b", "B."),
            {"id": "r", "kind": "run", "flow": "f", "deps": ["a"], "when": 'steps["b"] != ""',
             "with": {"v": "${steps.b.output}", "deep": [{"w": "x ${steps.a.output}"}]}},
            {"id": "k", "kind": "run", "flow": "f", "checkpoint": "k"},
            {"id": "u", "kind": "run", "flow": "consumed"},
            flows={"f": {"input": {"v": "string?", "deep": "any?"},
                         "steps": [agent("c", "C.")]},
                   "consumed": {"steps": [agent("c", "C.", dispatch="consumer")]}},
        )
    )  # fmt: skip
    run, checkpointed, consumed = plan.steps[2:5]
    assert reads(run) == ["a", "b"]
    assert (overlaps(run), overlaps(run, flows=plan.flows)) == (False, True)
    assert not overlaps(checkpointed, flows=plan.flows)  # a checkpoint still runs alone
    assert not overlaps(consumed, flows=plan.flows)  # and so does a body with a consumer step


async def test_a_revert_while_a_bodys_gate_waits_walks_again_from_the_checkpoint(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        agent("draft", "Draft.", checkpoint="drafted"),
        {"id": "r", "kind": "run", "flow": "gated"},
        agent("side", "Side.", "aside"),
        flows={"gated": {"steps": [{"id": "g", "kind": "gate", "gate": {}},
                                   agent("w", "W.", "w")], "output": "${steps.w.output}"}},
        concurrency=2,
        budget={"calls": 4},  # a revert buys no calls back: side runs again
    )  # fmt: skip
    handle = await start(client, worker_queue, plan)
    waiting = await wait_state(handle, "awaiting_gate")
    # A revert waits for a settled moment (``checkpoint-busy`` while side is in flight).
    deadline = asyncio.get_running_loop().time() + 60
    while waiting.steps["side"] != "settled":
        assert asyncio.get_running_loop().time() < deadline, waiting.steps
        await asyncio.sleep(0.05)
        waiting = await wait_state(handle, "awaiting_gate")
    first = waiting.pending_gates[0]
    assert first.step == "r/g"
    reverted = await handle.execute_update(UPDATE_REVERT, RevertInput(label="drafted"))
    assert reverted["restored"] == ["draft"] and reverted["resumes_at"] == "r"
    again = await wait_state(handle, "awaiting_gate")
    token = again.pending_gates[0].token
    assert again.pending_gates[0].step == "r/g" and token != first.token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="r/g", decision="approve", token=token)
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"] == "w" and result.outputs["side"] == "aside"
    assert result.calls == 4  # draft once, side twice, w once
    trail = await events(handle)
    assert [e.data["step"] for e in trail if e.type == "gate.opened"] == ["r/g", "r/g"]
    assert sum(e.type == "checkpoint.reverted" for e in trail) == 1
    await replays(handle, settings)


async def test_a_subflow_waits_for_what_its_with_reads(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        {"id": "r", "kind": "run", "flow": "one", "with": {"t": "${steps.a.output}"}},
        fake_agent("side"),
        flows={"one": {"input": {"t": "string"}, "steps": [fake_agent("x")]}},
        concurrency=3,
    )
    with holding(fake):
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)  # a and side: r reads a, so its body has not started
        held = await status(handle)
        assert (held.steps["a"], held.steps["side"]) == ("running", "running")
        assert (held.steps["r"], held.steps["r/x"]) == ("pending", "pending")
    await handle.result()
    seen = order(await events(handle))
    assert seen.index(("dispatched", "r/x")) > seen.index(("settled", "a"))


async def test_a_failed_subflow_routes_to_its_on_fail_while_a_sibling_runs(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "risky", "on_fail": "rescue"},
        agent("use", "Use ${steps.r.output}.", "used", deps=["r"]),
        agent("rescue", "Recover.", "recovered"),
        agent("tail", "Close.", "closed"),
        flows={"risky": {"steps": [agent("x", "Give v.", "junk", out="R")]}},
        contracts={"R": {"v": "integer"}},
        concurrency=4,
    )
    handle = await start(client, worker_queue, plan)
    error = await ended_with(handle)
    assert error.type == "steps-stranded" and "use (r failed)" in error.message
    done = await status(handle)
    assert (done.steps["r"], done.steps["use"]) == ("failed", "pending")
    assert (done.steps["rescue"], done.steps["tail"]) == ("settled", "settled")
    dispatched = [e.data["step"] for e in await events(handle) if e.type == "dispatched"]
    assert set(dispatched[:2]) == {"r/x", "tail"}  # rescue waits for the step routing to it
