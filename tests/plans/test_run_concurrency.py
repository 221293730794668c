"""Independent steps in flight together (a plan's ``concurrency``), through a real worker.

The fake provider (a real HTTP server) holds every call it receives (``held_calls``), so a
test sees which calls are in flight at once: two independent steps both reach it before
either is answered, a step that reads them starts only after both have settled, and a run
whose budget fits two of three calls never has the third in flight; it waits
``awaiting_budget`` once the two have settled, and the ledger never shows more spent than its
limit. Histories replay.
"""

from __future__ import annotations

import pytest
import yaml
from temporalio.client import Client

from activities.config import Settings
from tests.fakes import FakeProvider
from tests.plans import held_calls
from tests.plans.held_calls import fake_agent, holding, in_flight, order, replays
from tests.plans.run_helpers import agent, ended_with, events, plan_doc, start, status, wait_state
from tests.test_readme import fenced, section
from workflows.names import UPDATE_EXTEND_BUDGET, UPDATE_RESOLVE_GATE
from workflows.plan.activation import overlaps, reads
from workflows.plan.boundaries import Reservation, boundaries, plan_totals
from workflows.plan.ledger import PlanLedger
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanRunResult, ResolveGateInput
from workflows.plan.validate import load_plan, validate_document
from workflows.plan_run.overlap import Overlap

fake_queue = held_calls.fake_queue


async def test_independent_steps_are_in_flight_at_once(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"),
        fake_agent("b"),
        agent("join", "Join ${steps.a.output} and ${steps.b.output}.", "joined"),
        agent("tail", "Close.", "closed", deps=["join"]),
        concurrency=2,
    )
    with holding(fake):
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)  # one at a time, the second call never arrives while held
        held = await status(handle)
        assert (held.steps["a"], held.steps["b"], held.steps["join"]) == (
            "running", "running", "pending",
        )  # fmt: skip
    result: PlanRunResult = await handle.result()
    assert result.outputs["join"] == "joined" and result.outputs["tail"] == "closed"
    seen = order(await events(handle))
    first_settled = next(i for i, (kind, _) in enumerate(seen) if kind == "settled")
    assert {s for kind, s in seen[:first_settled] if kind == "dispatched"} == {"a", "b"}
    join_at = seen.index(("dispatched", "join"))  # join read both: it waited for both
    assert {("settled", "a"), ("settled", "b")} <= set(seen[:join_at])
    await replays(handle, settings)


async def test_an_overlap_never_spends_past_the_budget(
    client: Client, settings: Settings, fake: FakeProvider, fake_queue: str
) -> None:
    plan = plan_doc(
        fake_agent("a"), fake_agent("b"), fake_agent("c"), concurrency=3, budget={"calls": 2}
    )
    with holding(fake):
        handle = await start(client, fake_queue, plan)
        await in_flight(fake, 2)
        held = await status(handle)
        assert held.steps["c"] == "pending"  # two calls are reserved: the third does not fit
        assert held.budget is not None and held.budget.calls_spent <= 2
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.budget is not None
    assert (paused.budget.calls_spent, paused.budget.calls_limit) == (2, 2)
    assert len(fake.seen) == 2
    await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3))
    result: PlanRunResult = await handle.result()
    assert sorted(result.outputs) == ["a", "b", "c"] and len(fake.seen) == 3
    await replays(handle, settings)


async def test_without_concurrency_steps_run_one_at_a_time(
    client: Client, fake: FakeProvider, fake_queue: str
) -> None:
    with holding(fake):
        handle = await start(client, fake_queue, plan_doc(fake_agent("a"), fake_agent("b")))
        await in_flight(fake, 1)
        assert (await status(handle)).steps["b"] == "pending"
    await handle.result()
    seen = order(await events(handle))
    assert seen == [("dispatched", "a"), ("settled", "a"), ("dispatched", "b"), ("settled", "b")]


# --- pure rules -----------------------------------------------------------------------------


def test_what_a_step_waits_for_and_what_may_overlap() -> None:
    plan = load_plan(
        plan_doc(
            agent("a", "A."),
            agent("b", "B ${steps.a.output}.", ensure=[{"expr": 'steps["a"] != result'}]),
            agent("c", "C.", deps=["a"], when='steps["b"] == "x"'),
            {"id": "s", "kind": "set", "set": {"v": 'steps["c"]'}},
            {"id": "g", "kind": "gate", "gate": {}},
            agent("k", "K.", checkpoint="k"),
            agent("u", "U.", dispatch="consumer"),
        )
    )
    assert [reads(s) for s in plan.steps[:4]] == [[], ["a"], ["a", "b"], ["c"]]
    assert [overlaps(s) for s in plan.steps] == [True, True, True, True, False, False, False]


def test_the_overlap_fits_beside_what_is_reserved() -> None:
    plan = load_plan(plan_doc(agent("a", "A."), budget={"calls": 3}))
    ledger = PlanLedger.start(plan_totals(plan, boundaries(plan)), calls=3)
    pool = Overlap(ledger)
    assert pool.fits("a", Reservation(2, 0))
    ledger.open("a", Reservation(2, 0))  # what join does for the first step in flight
    assert pool.fits("b", Reservation(1, 0))
    assert not pool.fits("b", Reservation(2, 0))  # 2 in flight + 2 > 3


@pytest.mark.parametrize("value", [0, 257, "2"])
def test_concurrency_is_a_count_from_1_to_256(value: object) -> None:
    codes = [
        e.code for e in validate_document(plan_doc(agent("a", "A."), concurrency=value)).errors
    ]
    assert codes and set(codes) <= {"field.range", "field.type"}


async def test_a_gate_runs_alone_and_a_revise_walks_again_from_its_target(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        agent("draft", "Draft.", "one", "two"),
        agent("extra", "Extra.", "more", when="false"),
        agent("notes", "Notes.", "noted"),
        {"id": "review", "kind": "gate", "deps": ["draft"],
         "gate": {"on_revise": "draft", "max_rounds": 1}},
        agent("ship", "Ship ${steps.draft.output}.", "shipped", deps=["review"]),
        {"id": "optional", "kind": "gate", "gate": {}, "when": "false"},  # skipped, not waited
        agent("last", "Last.", "finished", deps=["optional"]),  # runs: that skip was optional's
        concurrency=2,
        budget={"calls": 6},  # the revise runs draft and notes again
    )  # fmt: skip
    handle = await start(client, worker_queue, plan)
    for decision in ("revise", "approve"):
        gate = (await wait_state(handle, "awaiting_gate")).pending_gates[0]
        decide = ResolveGateInput(step="review", decision=decision, token=gate.token)
        await handle.execute_update(UPDATE_RESOLVE_GATE, decide)
    result: PlanRunResult = await handle.result()
    assert result.outputs["draft"] == "two" and result.outputs["ship"] == "shipped"
    done = await status(handle)
    assert (done.steps["extra"], done.steps["optional"]) == ("skipped",) * 2
    assert result.outputs["last"] == "finished"
    trail = await events(handle)
    dispatched = [e.data["step"] for e in trail if e.type == "dispatched"]
    # Both walks start draft and notes together; the gate waits for both; ship after it.
    assert dispatched == ["draft", "notes", "draft", "notes", "ship", "last"]
    await replays(handle, settings)


async def test_the_concurrent_steps_recipe_runs_as_written(
    client: Client, worker_queue: str
) -> None:
    (recipe,) = fenced(section("## Concurrent steps", page="docs/plans.md"), "yaml")
    handle = await start(client, worker_queue, yaml.safe_load(recipe))
    result: PlanRunResult = await handle.result()
    assert result.outputs["verdict"] == "ship it"
    seen = order(await events(handle))
    assert seen[:2] == [("dispatched", "style"), ("dispatched", "facts")]  # both in flight
    assert seen[-2:] == [("dispatched", "verdict"), ("settled", "verdict")]


async def test_routes_keep_their_meaning_when_steps_overlap(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        agent("risky", "Give v.", "junk", out="R", on_fail="rescue"),
        agent("publish", "Publish ${steps.risky.output.v}.", "published", deps=["risky"]),
        agent("rescue", "Recover.", "recovered"),
        agent("tail", "Close.", "closed"),
        contracts={"R": {"v": "integer"}},
        concurrency=4,
    )
    handle = await start(client, worker_queue, plan)
    error = await ended_with(handle)
    assert error.type == "steps-stranded" and "publish (risky failed)" in error.message
    done = await status(handle)
    assert (done.steps["risky"], done.steps["publish"]) == ("failed", "pending")
    assert (done.steps["rescue"], done.steps["tail"]) == ("settled", "settled")
    dispatched = [e.data["step"] for e in await events(handle) if e.type == "dispatched"]
    assert dispatched[:2] == ["risky", "tail"]  # rescue waits for the step routing to it
