"""Sub-flows and nested budgets end to end (docs/plans.md, "Sub-flows and nested budgets") on the
real dev server.

The sim answers an unscripted step with the first line of its prompt, so what a child saw of
its ``with`` inputs shows in its output; ``x-sim`` outputs are counted per scoped id.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import Settings
from tests.plans.run_helpers import (
    agent,
    ended_with,
    failure,
    plan_doc,
    start,
    status,
    trace,
    wait_state,
)
from workflows.names import UPDATE_EXTEND_BUDGET, UPDATE_RESOLVE_GATE
from workflows.plan.run_types import ExtendPlanBudgetInput, PlanRunResult, ResolveGateInput

GATE = {"kind": "gate", "model": "sim:default", "fail_route": "write", "max_redos": 1}
REVIEW = {
    "input": {"items": "string[]", "topic": "string", "depth": "integer?"},
    "output": "${steps.check.output}",
    "steps": [
        {"id": "write", "kind": "agent", "model": "sim:default",
         "prompt": "Write about ${input.topic}: ${input.items}"},
        GATE | {"id": "check", "deps": ["write"], "prompt": "Check ${steps.write.output}",
                "x-sim": {"outputs": ["GATE: FAIL", "GATE: PASS"]}},
    ],
}  # fmt: skip


def review_plan(*extra: dict[str, Any], **header: Any) -> dict[str, Any]:
    return plan_doc(
        agent("find", "Find items.", '{"items": ["a", "b"]}'),
        {"id": "r1", "kind": "run", "flow": "review", "deps": ["find"],
         "with": {"items": "${steps.find.output.items}", "topic": "T ${input.topic}"}},
        {"id": "r2", "kind": "run", "flow": "review", "with": {"items": ["z"], "topic": "two"}},
        agent("after", "Got ${steps.r1.output}", deps=["r1"]),
        *extra,
        **({"flows": {"review": REVIEW}} | header),
    )  # fmt: skip


async def test_a_run_step_walks_its_flow_inline_with_typed_inputs(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, review_plan(), args={"topic": "sea"})
    result: PlanRunResult = await handle.result()
    out = {k: v.splitlines()[0] for k, v in result.outputs.items() if isinstance(v, str)}
    # exactly one reference passes the value typed (a list), text around one renders it
    assert out["r1/write"] == 'Simulated answer to: Write about T sea: ["a", "b"]'
    assert out["r2/write"] == 'Simulated answer to: Write about two: ["z"]'
    # the flow's output is its gate's; x-sim counts per scoped id, so each call redid once
    assert out["r1"] == out["r2"] == "GATE: PASS"
    assert out["after"] == "Simulated answer to: Got (quoted) GATE: PASS"  # spliced, defanged
    rows = trace(settings.runs_dir, handle.id)
    invocations = [r["data"]["invocation"] for r in rows if r["type"] == "dispatched"]
    assert invocations == [
        "find#1",
        "r1/write#1", "r1/check#1", "r1/write#2", "r1/check#2",
        "r2/write#1", "r2/check#1", "r2/write#2", "r2/check#2",
        "after#1",
    ]  # fmt: skip
    started = [r for r in rows if r["type"] == "subflow.started"]
    settled = {r["data"]["step"]: r for r in rows if r["type"] == "subflow.settled"}
    assert [r["data"]["step"] for r in started] == ["r1", "r2"]
    assert started[0]["data"]["inputs"] == ["items", "topic"]
    after = next(r for r in rows if r["type"] == "dispatched" and r["data"]["step"] == "after")
    assert after["caused_by"] == [settled["r1"]["seq"]]  # a run step settles like any step
    done = await status(handle)
    assert done.steps["r1/check"] == done.steps["r1"] == "settled"
    assert list(done.steps)[:4] == ["find", "r1", "r1/write", "r1/check"]
    assert result.calls == 10  # the default budget counts each call's children
    graph = json.loads((settings.runs_dir / handle.id / "graph.json").read_text())["steps"]
    children = {n["id"]: n for n in graph if n.get("flow") == "review"}
    assert list(children) == ["r1/write", "r1/check", "r2/write", "r2/check"]
    assert children["r1/write"]["deps"] == ["r1"] and children["r1/check"]["deps"] == ["r1/write"]
    assert all(n["state"] == "settled" for n in children.values())


async def test_with_text_that_is_not_the_contracts_type_fails_malformed_output(
    client: Client, worker_queue: str
) -> None:
    plan = review_plan()
    plan["steps"][0]["x-sim"] = {"outputs": ['{"items": "just one"}']}
    error = await failure(client, worker_queue, plan, args={"topic": "sea"})
    assert error.type == "malformed-output"
    assert error.message.startswith("r1.with: with.items: the flow's input declares string[]")


async def test_exactly_one_reference_passes_the_value_typed(
    client: Client, worker_queue: str
) -> None:
    def plan(tag: str) -> dict[str, Any]:
        return plan_doc(
            agent("find", "Count.", '{"n": 3}'),
            {"id": "r", "kind": "run", "flow": "label", "deps": ["find"], "with": {"tag": tag}},
            flows={"label": {"input": {"tag": "string"},
                             "steps": [agent("put", "Label ${input.tag}.")]}},
        )  # fmt: skip

    error = await failure(client, worker_queue, plan("${steps.find.output.n}"))
    assert error.type == "malformed-output"  # the number 3 itself, not the text "3"
    assert error.message == (
        "r: with does not meet flow 'label''s input: tag: expected string, got int"
    )
    result: PlanRunResult = await (
        await start(client, worker_queue, plan("n=${steps.find.output.n}"))
    ).result()
    assert result.outputs["r/put"].startswith("Simulated answer to: Label n=3.")


@pytest.mark.parametrize(
    ("reason", "bend"),
    [
        ("gate-failed", {"max_redos": 0, "x-sim": {"outputs": ["GATE: FAIL"]}}),
        ("gate-verdict-unparseable", {"max_redos": 0, "x-sim": {"outputs": ["maybe"]}}),
    ],
)
async def test_a_child_failure_fails_the_run_step_with_the_childs_reason(
    client: Client, worker_queue: str, settings: Settings, reason: str, bend: dict[str, Any]
) -> None:
    flow = json.loads(json.dumps(REVIEW))
    flow["steps"][1].update(bend)
    plan = review_plan(flows={"review": flow})
    error = await failure(client, worker_queue, plan, args={"topic": "sea"})
    assert error.type == reason
    assert error.message.startswith("r1: gate 'r1/check'")  # the scoped child id
    # routed by the run step's on_fail, the same failure lets the run finish (without the
    # steps that need r1's output, which would be stranded, and r2, which fails as r1 does)
    plan["steps"][1]["on_fail"] = "handle"
    plan["steps"] = [s for s in plan["steps"] if s["id"] not in ("r2", "after")]
    plan["steps"].append(agent("handle", "Recover.", "recovered"))
    handle = await start(client, worker_queue, plan, args={"topic": "sea"})
    result: PlanRunResult = await handle.result()
    assert result.outputs["handle"] == "recovered" and "r1" not in result.outputs
    rows = trace(settings.runs_dir, handle.id)
    failed = next(r for r in rows if r["type"] == "subflow.failed")
    assert failed["data"] | {"flow": "review"} == {
        "step": "r1", "flow": "review", "child": "r1/check", "reason": reason,
    }  # fmt: skip
    routed = next(r for r in rows if r["type"] == "step.failed")
    assert routed["data"] == {"step": "r1", "reason": reason, "on_fail": "handle"}
    done = await status(handle)
    assert (done.steps["r1"], done.steps["r1/check"], done.steps["r1/write"]) == (
        "failed", "failed", "settled",
    )  # fmt: skip


THREE = {
    "steps": [
        agent("one", "First."),
        agent("two", "Second.", deps=["one"]),
        agent("three", "Third.", deps=["two"]),
    ]
}


async def test_a_subflow_ledger_runs_out_before_the_runs_and_fails_instead_of_pausing(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    # The run's ledger (calls=2) cannot fit the third child either; the sub-flow's is asked
    # first, so the run fails rather than asking an operator to pay for a refused boundary.
    plan = plan_doc(
        {"id": "call", "kind": "run", "flow": "three", "budget": {"calls": 2}},
        flows={"three": THREE},
        budget={"calls": 2},
    )
    handle = await start(client, worker_queue, plan)
    error = await ended_with(handle)
    assert error.type == "subflow-budget-exhausted"
    assert "call/three" in error.message and "sub-flow ledger of 'call'" in error.message
    rows = trace(settings.runs_dir, handle.id)
    assert [r["data"]["step"] for r in rows if r["type"] == "dispatched"] == [
        "call/one",
        "call/two",
    ]
    exhausted = next(r for r in rows if r["type"] == "budget.exhausted")
    assert exhausted["data"]["ledger"] == "subflow" and exhausted["data"]["owner"] == "call"
    assert exhausted["data"]["step"] == "call/three"
    assert not [r for r in rows if r["type"] == "paused"]
    final = await status(handle)
    assert final.state == "failed" and final.budget and final.budget.calls_spent == 2
    (ledger,) = final.ledgers
    assert (ledger.owner, ledger.scope, ledger.calls_limit, ledger.calls_spent) == (
        "call", "subflow", 2, 2,
    )  # fmt: skip


async def test_a_tokens_overrun_keeps_the_output_and_refuses_the_retry(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        agent("keep", "Keep.", '{"items": ["kept"]}', budget={"tokens": 2}),
        agent("s", "List items.", "not json", '{"items": []}', deps=["keep"], out="Found",
              budget={"tokens": 2}, retry={"max_attempts": 2, "on": ["malformed-output"]},
              idempotent=True, on_fail="handle"),
        agent("handle", "Recover.", "recovered"),
        contracts={"Found": {"items": "string[]"}},
    )  # fmt: skip
    handle = await start(client, worker_queue, plan)
    result: PlanRunResult = await handle.result()
    # the call that overran its ledger happened: its output is kept, the run goes on
    assert result.outputs["keep"] == '{"items": ["kept"]}'
    assert result.outputs["handle"] == "recovered" and "s" not in result.outputs
    rows = trace(settings.runs_dir, handle.id)
    dispatched = [r["data"]["invocation"] for r in rows if r["type"] == "dispatched"]
    assert dispatched == ["keep#1", "s#1", "handle#1"]  # the retry of s is never dispatched
    kinds = [r["type"] for r in rows]
    assert kinds.index("contract.failed") < kinds.index("budget.exhausted")
    exhausted = next(r["data"] for r in rows if r["type"] == "budget.exhausted")
    assert (exhausted["ledger"], exhausted["owner"], exhausted["reason"]) == (
        "step", "s", "step-budget-exhausted",
    )  # fmt: skip
    assert "tokens spent of tokens=2" in exhausted["detail"]
    routed = next(r["data"] for r in rows if r["type"] == "step.failed")
    assert routed == {"step": "s", "reason": "step-budget-exhausted", "on_fail": "handle"}
    ledgers = {ledger.owner: ledger for ledger in (await status(handle)).ledgers}
    assert ledgers["keep"].tokens_spent > 2 and ledgers["keep"].calls_spent == 1
    assert ledgers["s"].calls_spent == 1 and ledgers["s"].wall_spent_ms >= 0


async def test_a_fan_out_ledger_covers_every_item(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        {"id": "fan", "kind": "fanout", "budget": {"tokens": 2},
         "fanout": {"over": ["a", "b", "c"], "chain": ["fan.one"], "concurrency": 1}},
        agent("fan.one", "One item."),
        budget={"calls": 3},
    )  # fmt: skip
    handle = await start(client, worker_queue, plan)
    error = await ended_with(handle)
    assert error.type == "step-budget-exhausted" and "ledger of 'fan'" in error.message
    rows = trace(settings.runs_dir, handle.id)
    assert [r["data"]["invocation"] for r in rows if r["type"] == "dispatched"] == ["fan.one:0#1"]
    assert (await status(handle)).steps["fan"] == "failed"


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_revise_re_runs_the_body_in_the_same_ledger(
    client: Client, worker_queue: str, calls: int
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "one", "budget": {"calls": calls}},
        {"id": "g", "kind": "gate", "deps": ["r"], "gate": {"on_revise": "r", "max_rounds": 1}},
        flows={"one": {"steps": [agent("a", "Write.", "first", "second")]}},
        budget={"calls": 2},
    )
    handle = await start(client, worker_queue, plan)
    gate = (await wait_state(handle, "awaiting_gate")).pending_gates[0]
    assert (await status(handle)).steps["r/a"] == "settled"
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="g", decision="revise", token=gate.token)
    )
    if calls == 1:  # the sub-flow's ledger lives for the run: its one call is spent
        error = await ended_with(handle)
        assert error.type == "subflow-budget-exhausted" and "r/a" in error.message
        return
    again = await wait_state(handle, "awaiting_gate")
    assert again.steps["r/a"] == "settled" and again.pending_gates[0].token != gate.token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE,
        ResolveGateInput(step="g", decision="approve", token=again.pending_gates[0].token),
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"] == result.outputs["r/a"] == "second"  # x-sim counts on


async def test_the_runs_ledger_pauses_at_a_child_and_an_extension_continues_the_body(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        {"id": "r", "kind": "run", "flow": "two"},
        flows={"two": {"steps": [agent("one", "First."), agent("two", "Second.")]}},
        budget={"calls": 1},
    )
    handle = await start(client, worker_queue, plan)
    paused = await wait_state(handle, "awaiting_budget")
    assert paused.step == "r/two" and paused.budget and "'r/two'" in (paused.budget.need or "")
    await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(calls=2))
    result: PlanRunResult = await handle.result()
    assert result.outputs["r"].startswith("Simulated answer to: Second.") and result.calls == 2
