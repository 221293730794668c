"""Model gates and tournament steps in flight beside other steps under a plan's ``concurrency``,
through a real worker.

The fake provider (a real HTTP server) holds the calls it receives, so a test sees what is in
flight at once: a model gate's call beside an agent step's (at the top level and in a body),
within the run's budget (the gate's worst case is reserved beside the step's, and a third step
that does not fit waits ``awaiting_budget``); a tournament child running to its end while an
agent step's call is held; a gate that may redo a step keeps the plan order's reading of it
(what reads the redone step after the gate waits for the gate). Histories replay.
"""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import Client

from activities.config import Settings
from tests.fakes import FakeProvider, Reply, Seen, openai_completion, sim_responder
from tests.plans import held_calls
from tests.plans.held_calls import fake_agent, in_flight, order, replays
from tests.plans.run_helpers import agent, events, plan_doc, start, status, wait_state
from workflows.names import UPDATE_EXTEND_BUDGET
from workflows.plan.activation import overlaps, reads, redo_waits
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanRunResult
from workflows.plan.validate import load_plan

fake_queue = held_calls.fake_queue


@pytest.fixture(autouse=True)
def gates_pass(fake: FakeProvider) -> None:
    """The fake provider's gate calls pass; any other is the simulator's."""
    fake.responder = judge


def judge(seen: Seen) -> Reply:
    """A gate's call passes; any other is the simulator's."""
    if "Judge" in str(seen.body.get("messages", [])):
        return Reply(body=openai_completion("Looks right.\nGATE: PASS", model=seen.body["model"]))
    return sim_responder(seen)


def fake_gate(step_id: str, **fields: object) -> dict[str, object]:
    return {"id": step_id, "kind": "gate", "prompt": "Judge the work.", "model": "fake:m"} | fields


async def test_a_model_gate_runs_beside_an_agent_step_within_the_runs_budget(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        fake_gate("g"),
        fake_agent("b"),
        concurrency=3,
        budget={"calls": 2},
    )
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)  # alone, the gate would wait for a and b for the gate
        held = await status(handle)
        assert (held.steps["a"], held.steps["g"], held.steps["b"]) == (
            "running",
            "running",
            "pending",  # the gate's call is reserved beside a's: b's does not fit
        )
        assert held.budget is not None and held.budget.calls_spent <= 2
    finally:
        fake.resume()
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.step == "b" and len(fake.seen) == 2
    await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3))
    result: PlanRunResult = await handle.result()
    assert str(result.outputs["g"]).endswith("GATE: PASS") and result.calls == 3
    await replays(handle, settings)


async def test_a_model_gate_in_a_body_runs_beside_its_sibling(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "checked"},
        flows={"checked": {"steps": [fake_agent("x"), fake_gate("g")],
                           "output": "${steps.x.output}"}},
        concurrency=2,
    )  # fmt: skip
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)
        held = await status(handle)
        assert (held.steps["r/x"], held.steps["r/g"]) == ("running", "running")
    finally:
        fake.resume()
    result: PlanRunResult = await handle.result()
    assert str(result.outputs["r/g"]).endswith("GATE: PASS")
    await replays(handle, settings)


async def test_a_tournament_step_runs_to_its_end_while_an_agent_steps_call_is_held(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    tournament = {"id": "best", "kind": "tournament", "prompt": "Write a haiku.",
                  "model": "sim:default", "tournament": {"profile": "quick"}}  # fmt: skip
    plan = plan_doc(fake_agent("a"), tournament, concurrency=2)
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 1)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while (held := await status(handle)).steps["best"] != "settled":
            assert loop.time() < deadline, held.steps  # alone, it would wait for a's answer
            await asyncio.sleep(0.1)
        assert held.steps["a"] == "running" and len(fake.seen) == 1
    finally:
        fake.resume()
    result: PlanRunResult = await handle.result()
    assert "[sim q=" in str(result.outputs["best"]) and result.outputs["a"]
    await replays(handle, settings)


async def test_what_reads_a_step_a_gate_may_redo_waits_for_the_gate(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    verdicts = {"outputs": ["GATE: FAIL", "GATE: PASS"]}
    gate = {"id": "g", "kind": "gate", "prompt": "Judge ${steps.w.output}.", "fail_route": "w",
            "max_redos": 1, "model": "sim:default", "x-sim": verdicts}  # fmt: skip
    plan = plan_doc(
        agent("w", "Write.", "draft one", "draft two"),
        gate,
        agent("side", "Aside."),
        agent("after", "Use ${steps.w.output}."),
        concurrency=3,
    )
    handle = await start(client, worker_queue, plan)
    result: PlanRunResult = await handle.result()
    assert "draft two" in str(result.outputs["after"])  # the redone draft, as in plan order
    trail = await events(handle)
    seen = order(trail)
    last_gate = max(i for i, entry in enumerate(seen) if entry == ("settled", "g"))
    assert seen.index(("dispatched", "after")) > last_gate
    verdict = next(i for i, e in enumerate(trail) if e.type == "gate.verdict")
    dispatched_side = next(
        i for i, e in enumerate(trail) if e.type == "dispatched" and e.data["step"] == "side"
    )
    assert dispatched_side < verdict  # side did not wait for the gate
    await replays(handle, settings)


async def test_a_gates_terminal_route_ends_the_run_once_its_sibling_has_settled(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    stop = agent("g", "Judge.", "not worth it\nGATE: FAIL", kind="gate", fail_route="terminal:stop")
    plan = plan_doc(fake_agent("a"), stop, agent("after", "Never.", deps=["g"]), concurrency=2)
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 1)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while (held := await status(handle)).steps["g"] != "settled":
            assert loop.time() < deadline, held.steps  # alone, the gate would wait for a
            await asyncio.sleep(0.1)
        assert held.state == "running" and held.steps["a"] == "running"  # the route waits for a
    finally:
        fake.resume()
    result: PlanRunResult = await handle.result()
    assert result.route == "stop" and result.outputs["a"] and "after" not in result.outputs
    await replays(handle, settings)


# --- pure rules -----------------------------------------------------------------------------


def test_gates_and_tournaments_overlap_only_when_allowed_and_redos_order_their_readers() -> None:
    plan = load_plan(
        plan_doc(
            agent("w", "Write."),
            agent("early", "Early ${steps.w.output}."),
            {"id": "g", "kind": "gate", "prompt": "Judge.", "fail_route": "w", "max_redos": 1},
            {"id": "h", "kind": "gate", "gate": {}},
            {"id": "t", "kind": "tournament", "prompt": "Best.", "model": "sim:default"},
            {"id": "end", "kind": "gate", "prompt": "Judge.", "fail_route": "terminal:stop"},
            agent("late", "Late ${steps.w.output}."),
            agent("free", "Free."),
        )
    )
    g, h, t, end = plan.steps[2:6]
    assert [overlaps(s) for s in (g, h, t, end)] == [False] * 4
    assert [overlaps(s, judged=True) for s in (g, h, t, end)] == [True, False, True, True]
    assert reads(g) == ["w"] and reads(end) == []  # a gate waits for what it may redo
    extra = redo_waits(plan.steps)
    assert extra[2] == [1]  # g waits for early (it reads w, which g may redo)
    assert extra[6] == [2]  # late reads w: it waits for g
    assert extra[0] == extra[1] == extra[7] == []
