"""Consumer steps (docs/plans.md, "Consumer steps") through a real ``PlanRun``: issuances,
``step_done`` from the typed client, the plain ``temporal`` CLI (update and signal), retries with
new tokens, the timeout, fan-out items, and the refusals that leave no history event."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from tests.plans.run_helpers import agent, events, plan_doc, start, status, trace
from tests.plans.test_run_control import history_length, signal, update
from workflows.names import QUERY_ISSUANCE, UPDATE_STEP_DONE
from workflows.plan.consumer import MAX_RESULT_BYTES, IssuanceView, StepDoneInput, token_digest
from workflows.plan.run_types import PlanRunResult, PlanStatus


def consumer(step_id: str, prompt: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "kind": "agent", "prompt": prompt, "dispatch": "consumer"} | fields


async def issued(handle: Any, *, count: int = 1, after: set[str] | None = None) -> PlanStatus:
    """The status once ``count`` issuances are live whose tokens are not in ``after``."""
    for _ in range(400):
        current = await status(handle)
        fresh = [i for i in current.issuances if i.token not in (after or set())]
        if current.state == "awaiting_consumer" and len(fresh) >= count:
            return current
        assert current.state not in ("completed", "failed"), current.error
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {count} issuance(s): {current}")


def _message(exc: WorkflowUpdateFailedError) -> str:
    cause = exc.cause
    assert isinstance(cause, ApplicationError)
    return cause.message


async def settled_history(handle: Any) -> int:
    """The history's length once the run is quiet: no workflow task and no activity (the
    waiting trace write) pending. Not "unchanged for 0.3 s": under load the trace write can sit
    scheduled longer than that, then land after the refusals."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        length = await history_length(handle)
        described = (await handle.describe()).raw_description
        pending = len(described.pending_activities)
        quiet = not pending and not described.HasField("pending_workflow_task")
        # The second read: nothing landed between the history and the description.
        if quiet and await history_length(handle) == length:
            return length
        assert loop.time() < deadline, f"the run never went quiet ({pending} pending)"
        await asyncio.sleep(0.05)


async def done(handle: Any, step: str, token: str, result: Any) -> Any:
    return await handle.execute_update(
        UPDATE_STEP_DONE, StepDoneInput(step=step, token=token, result=result)
    )


async def test_a_consumer_answers_through_the_update_and_refusals_leave_no_history(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        consumer("build", "Build for ${input.who}.", out="Build"),
        agent("use", "Use ${steps.build.output.name}.", deps=["build"]),
        contracts={"Build": {"name": "string"}},
    )
    handle = await start(client, worker_queue, plan, args={"who": "ada"})
    shown = await issued(handle)
    assert shown.reason == "consumer-pending" and shown.step == "build"
    issuance = shown.issuances[0]
    assert (issuance.step, issuance.item, issuance.attempt) == ("build", None, 1)
    view: IssuanceView = await handle.query(QUERY_ISSUANCE, "build", result_type=IssuanceView)
    prompt = view.prompts[issuance.token]
    assert prompt.startswith("Build for ada.") and '"name":"string"' in prompt
    assert view.contract == {"name": "string"} and view.plan_digest.startswith("sha256:")

    before = await settled_history(handle)
    refusals = {
        "unknown-step": ("use", issuance.token, {"output": "x"}),
        "stale-dispatch-token": ("build", "0-superseded", {"output": "x"}),
        "invalid-result": ("build", issuance.token, {"output": "x", "failure": "y"}),
    }
    for reason, (step, token, result) in refusals.items():
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await done(handle, step, token, result)
        assert _message(refused.value).startswith(reason), refused.value.cause
    for bad in (
        {},
        {"output": "x", "usage": {"calls": 1}},
        {"output": "x", "usage": {"tokens": -1}},
        {"output": "x", "extra": 1},
        {"failure": ""},
        "just text",
        {"output": "x" * (MAX_RESULT_BYTES + 1)},
    ):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await done(handle, "build", issuance.token, bad)
        assert _message(refused.value).startswith("invalid-result"), bad
    assert await history_length(handle) == before  # nothing entered history

    accepted = await done(
        handle,
        "build",
        issuance.token,
        {"output": {"name": "widget"}, "usage": {"tokens": 120, "usd": 0.25, "wall_ms": 900}},
    )
    assert accepted["accepted"] == "output"
    result: PlanRunResult = await handle.result()
    assert json.loads(result.outputs["build"]) == {"name": "widget"}
    assert "Use widget." in result.outputs["use"]
    final = await status(handle)
    assert final.budget is not None and final.budget.calls_spent == 2
    assert final.budget.usd == pytest.approx(0.25)  # the sim step is free
    calls = (settings.runs_dir / handle.id / "calls.jsonl").read_text().splitlines()
    row = json.loads(calls[0])
    assert (row["invocation"], row["model"], row["output_tokens"]) == ("build#1", "consumer", 120)
    # The trace names the issuance by a digest of its token, never the token itself.
    text = (settings.runs_dir / handle.id / "trace.jsonl").read_text()
    assert issuance.token not in text
    rows = trace(settings.runs_dir, handle.id)
    [row] = [r for r in rows if r["type"] == "consumer.issued"]
    assert row["data"]["token"] == token_digest(issuance.token)
    assert [r["data"]["outcome"] for r in rows if r["type"] == "consumer.done"] == ["output"]


async def test_a_reported_failure_is_reissued_with_a_new_token_then_fails_dispatch_dead(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        consumer(
            "build",
            "Build.",
            idempotent=True,
            retry={"max_attempts": 2, "on": ["transport"]},
            budget={"tokens": 1000},
        ),
    )
    handle = await start(client, worker_queue, plan)
    first = (await issued(handle)).issuances[0]
    crashed = {"failure": "the compiler crashed", "usage": {"tokens": 30, "usd": 0.5}}
    await done(handle, "build", first.token, crashed)
    shown = await issued(handle, after={first.token})
    second = shown.issuances[0]
    # What the failing executor spent is settled all the same, in every covering ledger.
    assert shown.budget is not None and shown.budget.output_tokens == 30
    assert shown.budget.usd == pytest.approx(0.5)
    assert [(n.owner, n.tokens_spent) for n in shown.ledgers] == [("build", 30)]
    assert second.token != first.token and second.attempt == 2
    with pytest.raises(WorkflowUpdateFailedError) as stale:
        await done(handle, "build", first.token, {"output": "late"})
    assert _message(stale.value).startswith("stale-dispatch-token")
    await done(handle, "build", second.token, {"failure": "crashed again"})
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "dispatch-dead"
    assert "crashed again" in cause.message
    dispatched = [e for e in await events(handle) if e.type == "dispatched"]
    assert [e.data["invocation"] for e in dispatched] == ["build#1", "build#2"]


async def test_a_contract_failure_is_retried_with_feedback_in_a_new_issuance(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        consumer(
            "build",
            "Build.",
            out="Build",
            idempotent=True,
            retry={"max_attempts": 2, "on": ["malformed-output"]},
        ),
        contracts={"Build": {"name": "string"}},
    )
    handle = await start(client, worker_queue, plan)
    first = (await issued(handle)).issuances[0]
    await done(handle, "build", first.token, {"output": "not json"})
    second = (await issued(handle, after={first.token})).issuances[0]
    view: IssuanceView = await handle.query(QUERY_ISSUANCE, "build", result_type=IssuanceView)
    assert "Your previous attempt failed:" in view.prompts[second.token]
    await done(handle, "build", second.token, {"output": '{"name": "ok"}'})
    result: PlanRunResult = await handle.result()
    assert json.loads(result.outputs["build"]) == {"name": "ok"}


async def test_past_its_timeout_the_token_is_void_and_the_step_fails_dispatch_timeout(
    client: Client, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, plan_doc(consumer("build", "B.", timeout_ms=1000)))
    await issued(handle)
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "dispatch-timeout"
    types = [e.type for e in await events(handle)]
    assert "consumer.timeout" in types and "consumer.done" not in types


async def test_temporal_cli_update_and_signal_and_fanout_items_in_item_order(
    client: Client, worker_queue: str, server_address: str
) -> None:
    plan = plan_doc(
        {
            "id": "fan",
            "kind": "fanout",
            "fanout": {"over": ["a", "b"], "chain": ["fan.do"], "concurrency": 2},
        },
        consumer("fan.do", "Do the item."),
        agent("sum", "Sum up.", deps=["fan"]),
        budget={"calls": 6},
    )
    handle = await start(client, worker_queue, plan)
    shown = await issued(handle, count=2)
    tokens = {i.item: i.token for i in shown.issuances}
    assert set(tokens) == {0, 1} and len(set(tokens.values())) == 2

    # A stale token through the update form: refused, nothing enters history.
    before = await settled_history(handle)
    body = {"step": "fan.do", "token": "0-stale", "result": {"output": "x"}}
    code, out = await update(server_address, handle.id, "step_done", body)
    assert code != 0 and "stale-dispatch-token" in out
    assert await history_length(handle) == before

    # Item 1 answers first, through the plain update; item 0 through the signal form, after a
    # refused signal that is recorded as control.refused.
    body = {"step": "fan.do", "token": tokens[1], "result": {"output": "second"}}
    code, out = await update(server_address, handle.id, "step_done", body)
    assert code == 0, out
    bad = {"step": "fan.do", "token": tokens[0], "result": {"output": "x", "failure": "y"}}
    code, out = await signal(server_address, handle.id, "step_done_signal", bad)
    assert code == 0, out
    good = {"step": "fan.do", "token": tokens[0], "result": {"output": "first"}}
    code, out = await signal(server_address, handle.id, "step_done_signal", good)
    assert code == 0, out
    result: PlanRunResult = await handle.result()
    assert result.outputs["fan"] == ["first", "second"]  # item order, not answer order
    refused = [e for e in await events(handle) if e.type == "control.refused"]
    assert [e.data["reason"] for e in refused] == ["invalid-result"]
