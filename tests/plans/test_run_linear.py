"""PlanRun end to end on the real dev server: a linear plan, references, trace, budget pause."""

from __future__ import annotations

import json
import uuid

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from tests.plans.run_helpers import agent, failure, plan_doc, start, status, trace, wait_state
from workflows.names import PLAN_RUN, UPDATE_EXTEND_BUDGET
from workflows.plan.run_types import ExtendPlanBudgetInput, ExtendPlanBudgetResult, PlanRunResult

LINEAR = plan_doc(
    agent("a", "Name a colour for ${input.topic}.", "teal"),
    agent("b", "Describe ${steps.a.output} in one line.", deps=["a"]),
    agent("c", "Check: ${steps.b.output}", "looks right", deps=["b"]),
)


async def test_a_linear_plan_runs_its_steps_in_order_with_references(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, LINEAR, args={"topic": "the sea"})
    result: PlanRunResult = await handle.result()
    assert result.outputs["a"] == "teal"
    # b is unscripted: the sim answers the first line of its prompt, so the reference resolved.
    assert result.outputs["b"].startswith("Simulated answer to: Describe teal in one line.")
    assert result.outputs["c"] == "looks right"
    assert result.calls == 3 and result.simulated
    rows = trace(settings.runs_dir, handle.id)
    kinds = [r["type"] for r in rows]
    assert kinds[0] == "run.opened" and kinds[-1] == "run.closed"
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    dispatched = {r["data"]["step"]: r for r in rows if r["type"] == "dispatched"}
    settled = {r["data"]["step"]: r for r in rows if r["type"] == "settled"}
    assert [r["data"]["invocation"] for r in dispatched.values()] == ["a#1", "b#1", "c#1"]
    assert dispatched["b"]["caused_by"] == [settled["a"]["seq"]]  # the caused-by edge
    cost = json.loads((settings.runs_dir / handle.id / "cost.json").read_text())
    assert cost["outcome"] == "completed" and cost["invocations"] == 3
    final = await status(handle)
    assert final.state == "completed" and final.budget and final.budget.calls_spent == 3


async def test_a_missing_input_reference_fails_the_step(client: Client, worker_queue: str) -> None:
    error = await failure(client, worker_queue, LINEAR)  # no --arg topic
    assert error.type == "malformed-output"
    assert "topic" in error.message


async def test_a_budget_pause_is_extended_and_the_same_run_completes(
    client: Client, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, LINEAR, args={"topic": "x"}, budget={"calls": 2})
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.reason == "budget-exhausted" and paused.step == "c"
    assert (
        paused.budget
        and paused.budget.calls_spent == 2
        and "extend calls" in (paused.budget.need or "")
    )
    first_run = (await handle.describe()).run_id
    with pytest.raises(WorkflowUpdateFailedError) as refused:  # below what is spent
        await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=1))
    assert "extension-below-spent" in str(refused.value.cause)
    with pytest.raises(WorkflowUpdateFailedError) as capped:  # past max(2 x 3, 3) = 6
        await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=7))
    assert "budget-extension-exhausted" in str(capped.value.cause)
    extended = await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=3), result_type=ExtendPlanBudgetResult
    )
    assert extended.calls_limit == 3
    result: PlanRunResult = await handle.result()
    assert result.calls == 3
    assert (await handle.describe()).run_id == first_run  # the same run continued


async def test_an_invalid_plan_fails_at_once_with_its_codes(
    client: Client, worker_queue: str
) -> None:
    bad = plan_doc(agent("a", "x", deps=["nope"]))
    error = await failure(client, worker_queue, bad)
    assert error.type == "plan-invalid" and "deps.unknown" in error.message


async def test_input_that_does_not_decode_fails_with_input_invalid(
    client: Client, worker_queue: str
) -> None:
    handle = await client.start_workflow(
        PLAN_RUN,
        {"plan": LINEAR, "bogus": 1},
        id=f"p-{uuid.uuid4().hex[:10]}",
        task_queue=worker_queue,
    )
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "input.invalid" and "bogus" in cause.message
