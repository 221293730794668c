"""Independent children of a sub-flow's body in flight together under the plan's
``concurrency``, through a real worker.

The fake provider (a real HTTP server) holds the calls it receives, so a test sees what is in
flight at once: two independent children of one body; a body walked alone (its ``run`` step
has a checkpoint) still overlaps its children; the sub-flow's own ``budget`` never holds less
than the worst cases of its children in flight (a child that does not fit beside them waits
for them, and one that does not fit at all fails the sub-flow as it would walked one at a
time); the run's budget holds too (a child that does not fit waits ``awaiting_budget``).
Histories replay.
"""

from __future__ import annotations

from temporalio.client import Client

from activities.config import Settings
from tests.fakes import FakeProvider
from tests.plans import held_calls
from tests.plans.held_calls import fake_agent, in_flight, order, replays
from tests.plans.run_helpers import agent, ended_with, events, plan_doc, start, status, wait_state
from tests.plans.test_stratum_concurrency import LINEAR, run_on_sim, translated
from workflows.names import UPDATE_EXTEND_BUDGET
from workflows.plan.boundaries import Reservation
from workflows.plan.ledgers import Ledgers, NestedLedger
from workflows.plan.model import LedgerBudget
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanRunResult

fake_queue = held_calls.fake_queue


def most_in_flight(seen: list[tuple[str, str]]) -> int:
    """The most steps dispatched and not yet settled at any point of the trace."""
    now, most = 0, 0
    for kind, _ in seen:
        now += 1 if kind == "dispatched" else -1
        most = max(most, now)
    return most


ZED = agent("z", "Z ${steps.x.output} ${steps.y.output}.", "zed")
TWO = {"steps": [fake_agent("x"), fake_agent("y"), ZED], "output": "${steps.z.output}"}


async def test_independent_children_of_a_body_are_in_flight_together(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc({"id": "r", "kind": "run", "flow": "two"}, flows={"two": TWO}, concurrency=2)
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)  # walked one at a time, y would wait for x's answer
        held = await status(handle)
        assert (held.steps["r/x"], held.steps["r/y"]) == ("running", "running")
        assert held.steps["r/z"] == "pending"  # z reads both: it waits for both
    finally:
        fake.resume()
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"] == "zed" and result.calls == 3
    seen = order(await events(handle))
    assert {s for _, s in seen[:2]} == {"r/x", "r/y"} and {k for k, _ in seen[:2]} == {"dispatched"}
    assert seen.index(("dispatched", "r/z")) > max(
        seen.index(("settled", "r/x")), seen.index(("settled", "r/y"))
    )
    await replays(handle, settings)


async def test_a_body_walked_alone_still_overlaps_its_children(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        {"id": "r", "kind": "run", "flow": "two", "checkpoint": "walked"},  # runs alone
        flows={"two": TWO},
        concurrency=2,
    )
    fake.hold_when = lambda seen: "Write part a." not in str(seen.body.get("messages"))
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 3)  # a answered, then the body's two children held together
        held = await status(handle)
        assert (held.steps["a"], held.steps["r/x"], held.steps["r/y"]) == (
            "settled",
            "running",
            "running",
        )
    finally:
        fake.resume()
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"] == "zed"
    seen = order(await events(handle))
    assert seen.index(("settled", "a")) < seen.index(("dispatched", "r/x"))  # r waited for a
    assert most_in_flight(seen) == 2
    await replays(handle, settings)


async def test_a_child_waits_until_its_sub_flow_budget_holds_it_beside_the_others(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    retried = {"max_attempts": 2, "on": ["transport"]}  # worst case: two invocations
    x = fake_agent("x", retry=retried, idempotent=True)
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "three", "budget": {"calls": 3}},
        flows={"three": {"steps": [x, fake_agent("y"), fake_agent("z")]}},
        concurrency=3,
    )
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)  # x (2) and y (1) fill calls=3: z (1) does not fit beside them
        held = await status(handle)
        assert (held.steps["r/x"], held.steps["r/y"], held.steps["r/z"]) == (
            "running",
            "running",
            "pending",
        )
        assert len(fake.seen) == 2
    finally:
        fake.resume()
    result: PlanRunResult = await handle.result()  # x needed one call: z fits once they end
    assert result.calls == 3 and len(fake.seen) == 3
    seen = order(await events(handle))
    assert seen.index(("dispatched", "r/z")) > seen.index(("settled", "r/x"))
    assert most_in_flight(seen) == 2
    done = await status(handle)
    assert [(ledger.owner, ledger.calls_spent) for ledger in done.ledgers] == [("r", 3)]
    await replays(handle, settings)


async def test_a_child_that_cannot_fit_its_sub_flow_budget_fails_it_with_nothing_overspent(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "three", "budget": {"calls": 2}},
        flows={"three": {"steps": [fake_agent("x"), fake_agent("y"), fake_agent("z")]}},
        concurrency=3,
    )
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)
        assert (await status(handle)).steps["r/z"] == "pending"
    finally:
        fake.resume()
    error = await ended_with(handle)
    assert error.type == "subflow-budget-exhausted" and "r/z" in error.message
    assert len(fake.seen) == 2
    done = await status(handle)
    assert [(ledger.owner, ledger.calls_spent) for ledger in done.ledgers] == [("r", 2)]
    await replays(handle, settings)


async def test_the_runs_budget_holds_a_bodys_children_and_extends_for_the_one_left(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "three"},
        flows={"three": {"steps": [fake_agent("x"), fake_agent("y"), fake_agent("z")]}},
        concurrency=3,
        budget={"calls": 2},
    )
    fake.hold()
    try:
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)
        held = await status(handle)
        assert held.steps["r/z"] == "pending"
        assert held.budget is not None and held.budget.calls_spent <= 2
    finally:
        fake.resume()
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.step == "r/z" and paused.budget is not None
    assert (paused.budget.calls_spent, paused.budget.calls_limit) == (2, 2)
    assert len(fake.seen) == 2
    await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3))
    result: PlanRunResult = await handle.result()
    assert result.calls == 3 and len(fake.seen) == 3
    await replays(handle, settings)


async def test_a_failed_child_routes_to_its_on_fail_while_its_sibling_runs(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "risky"},
        flows={"risky": {"steps": [
            agent("x", "Give v.", "junk", out="R", on_fail="fix"),
            agent("y", "Other.", "fine"),
            agent("fix", "Recover.", "fixed"),
        ], "output": "${steps.y.output}"}},
        contracts={"R": {"v": "integer"}},
        concurrency=2,
    )  # fmt: skip
    handle = await start(client, worker_queue, plan)
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"] == "fine" and result.outputs["r/fix"] == "fixed"
    done = await status(handle)
    assert (done.steps["r/x"], done.steps["r/y"], done.steps["r/fix"]) == (
        "failed",
        "settled",
        "settled",
    )
    trail = [(e.type, e.data.get("step")) for e in await events(handle)]
    failed = trail.index(("step.failed", "r/x"))
    assert ("dispatched", "r/y") in trail[:failed]  # y did not wait for x
    assert trail.index(("dispatched", "r/fix")) > failed  # fix waited for the step routing to it
    await replays(handle, settings)


# --- pure rules -----------------------------------------------------------------------------


def test_room_beside_sums_the_worst_cases_in_flight_against_what_is_left() -> None:
    limits = LedgerBudget(calls=3, wall_ms=1000)
    ledgers = Ledgers(nested={"r": NestedLedger(owner="r", scope="subflow", limits=limits)})
    one = Reservation(1, 100)
    assert ledgers.room_beside("r", Reservation(2, 100), [one])
    assert not ledgers.room_beside("r", Reservation(2, 100), [one, one])  # 4 calls of 3
    assert not ledgers.room_beside("r", Reservation(1, 901), [one])  # 1,001 ms of 1,000
    assert ledgers.room_beside("r", Reservation(1, 900), [one])
    assert ledgers.room_beside("r", Reservation(9, 9000), [])  # alone: for check to say
    assert ledgers.room_beside("free", Reservation(9, 9000), [one])  # no sub-flow ledger
    assert ledgers.room_beside(None, Reservation(9, 9000), [one])  # the top level
    ledgers.nested["r"].calls = 2  # what it has spent counts against it
    assert not ledgers.room_beside("r", one, [one])
    ledgers.nested["r"].calls, ledgers.nested["r"].tokens = 0, 5
    ledgers.nested["r"].limits = LedgerBudget(calls=3, tokens=5)  # tokens spent: no room
    assert not ledgers.room_beside("r", one, [one])


# A chain of an entry flow calling a body of two independent steps.
WIDE_BODY = LINEAR.replace("after: [child_one], do: child-two", "do: child-two").replace(
    'from: "${child_two.output}"', 'from: "${child_one.output}"'
)


def test_a_stratum_sub_flow_with_independent_steps_gives_the_plan_its_concurrency() -> None:
    """The reference runs a sub-flow's ready steps at once too."""
    assert translated(WIDE_BODY)["concurrency"] == 2
    assert "concurrency" not in translated(LINEAR)  # every flow one chain: none


async def test_a_stratum_sub_flow_runs_its_independent_steps_side_by_side(
    client: Client, worker_queue: str
) -> None:
    handle = await run_on_sim(client, worker_queue, WIDE_BODY)
    seen = order(await events(handle))
    at = seen.index(("dispatched", "wrap/child_one"))  # both children before either settles
    assert seen[at : at + 2] == [("dispatched", "wrap/child_one"), ("dispatched", "wrap/child_two")]
