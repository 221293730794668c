"""Control messages that do not decode, through the real ``temporal`` binary: a signal is
recorded as ``control.refused`` (never dropped with a log line), an update is refused with the
code ``input.invalid`` and the field's rule (never a Python ``TypeError``), and the run goes on.
"""

from __future__ import annotations

import asyncio

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from tests.plans.run_helpers import agent, events, plan_doc, start, status, wait_state
from tests.plans.test_run_control import temporal
from workflows.names import (
    SIGNAL_EXTEND_BUDGET,
    SIGNAL_RESOLVE_GATE,
    SIGNAL_RESUME,
    UPDATE_EXTEND_BUDGET,
    UPDATE_RESOLVE_GATE,
    UPDATE_RESUME,
)
from workflows.plan.run_types import PlanRunResult, ResumeInput

PAUSED = plan_doc(
    {"id": "ask", "kind": "pause", "pause": {"state": "AWAITING_NAME", "resume_arg": "name"}},
    agent("hello", "Hello ${input.name}.", deps=["ask"]),
)


async def refusals(handle: WorkflowHandle, count: int) -> list[dict[str, object]]:
    async with asyncio.timeout(60):
        while True:
            refused = [e.data for e in await events(handle) if e.type == "control.refused"]
            if len(refused) >= count:
                return refused
            await asyncio.sleep(0.1)


async def test_signals_that_do_not_decode_are_recorded_as_refused(
    client: Client, server_address: str, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, PAUSED)
    await wait_state(handle, "awaiting_input")
    target = ["workflow", "signal", "--workflow-id", handle.id]
    sent = [
        (SIGNAL_RESUME, []),  # no input
        (SIGNAL_RESUME, ["--input", '{"args": 5}']),  # does not validate
        (SIGNAL_RESOLVE_GATE, ["--input", '{"step": "x"}']),  # fields missing
        (SIGNAL_EXTEND_BUDGET, ["--input", "{}", "--input", "{}"]),  # two inputs
    ]
    for name, inputs in sent:
        code, output = await temporal(server_address, *target, "--name", name, *inputs)
        assert code == 0, output
    refused = await refusals(handle, len(sent))
    assert [r["control"] for r in refused] == ["resume", "resume", "resolve_gate", "extend_budget"]
    assert {r["reason"] for r in refused} == {"input.invalid"}
    messages = [str(r["message"]) for r in refused]
    assert "no input given" in messages[0]
    assert "args: Input should be an object" in messages[1]
    assert "decision: Field required" in messages[2]
    assert "2 inputs given" in messages[3]
    assert len((await status(handle)).refused) == 4
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"name": "Ada"}))
    result: PlanRunResult = await handle.result()
    assert "hello" in result.outputs
    history = await handle.fetch_history()
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in [e.event_type for e in history.events]


async def test_updates_that_do_not_decode_are_refused_with_a_code(
    client: Client, server_address: str, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, PAUSED)
    await wait_state(handle, "awaiting_input")
    target = ["workflow", "update", "execute", "--workflow-id", handle.id]
    cases = [
        (UPDATE_RESUME, [], "no input given"),
        (UPDATE_RESUME, ["--input", "{}", "--input", "{}"], "2 inputs given"),
        (UPDATE_RESUME, ["--input", '{"args": []}'], "args: Input should be an object"),
        (UPDATE_RESOLVE_GATE, [], "no input given"),
        (UPDATE_EXTEND_BUDGET, ["--input", '{"calls": "many"}'], "calls: Input should be"),
    ]
    for name, inputs, expected in cases:
        code, output = await temporal(server_address, *target, "--name", name, *inputs)
        assert code != 0, output
        assert "input.invalid" in output and expected in output, output
        assert "TypeError" not in output and "positional argument" not in output, output
    history = await handle.fetch_history()
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED not in [
        e.event_type for e in history.events
    ]  # every refusal came from a validator: nothing entered history
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"name": "Ada"}))
    await handle.result()
