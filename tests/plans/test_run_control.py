"""Pauses and human gates answered through the real ``temporal`` CLI (update and signal forms).

The binary runs as a subprocess (``asyncio.create_subprocess_exec``, so the in-process worker
keeps running) against the session's dev server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from client.embedded import find_temporal_binary
from tests.plans.run_helpers import agent, events, plan_doc, start, status, wait_state
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.run_types import PlanRunResult, ResolveGateInput, ResumeInput

RELEASE = plan_doc(
    {
        "id": "ask",
        "kind": "pause",
        "pause": {"state": "AWAITING_APPROVER", "resume_arg": "approved_by"},
    },
    agent("draft", "Draft notes signed by ${input.approved_by}.", deps=["ask"]),
    {
        "id": "ship",
        "kind": "gate",
        "deps": ["draft"],
        "gate": {"on_revise": "draft", "max_rounds": 1},
    },
    agent("done", "Ship for ${steps.ask.output}.", deps=["ship"]),
)


async def temporal(address: str, *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        find_temporal_binary(),
        *args,
        "--address",
        address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


async def update(address: str, run_id: str, name: str, body: dict[str, Any]) -> tuple[int, str]:
    return await temporal(
        address, "workflow", "update", "execute", "--workflow-id", run_id, "--name", name,
        "--input", json.dumps(body),
    )  # fmt: skip


async def signal(address: str, run_id: str, name: str, body: dict[str, Any]) -> tuple[int, str]:
    return await temporal(
        address, "workflow", "signal", "--workflow-id", run_id, "--name", name,
        "--input", json.dumps(body),
    )  # fmt: skip


async def history_length(handle: WorkflowHandle) -> int:
    return len((await handle.fetch_history()).events)


async def test_pause_and_gate_through_the_temporal_cli(
    client: Client, worker_queue: str, server_address: str
) -> None:
    handle = await start(client, worker_queue, RELEASE)
    paused = await wait_state(handle, "awaiting_input")
    assert paused.reason == "plan-pause"
    assert paused.pending_pause and paused.pending_pause.resume_arg == "approved_by"

    code, out = await update(server_address, handle.id, "resume", {"args": {"approved_by": "ada"}})
    assert code == 0, out
    gate = await wait_state(handle, "awaiting_gate")
    assert gate.reason == "gate-pending" and [g.step for g in gate.pending_gates] == ["ship"]
    token = gate.pending_gates[0].token

    # First value wins: the same value again is fine, a different one is refused.
    code, out = await update(server_address, handle.id, "resume", {"args": {"approved_by": "ada"}})
    assert code == 0, out
    before = await history_length(handle)
    code, out = await update(server_address, handle.id, "resume", {"args": {"approved_by": "bob"}})
    assert code != 0 and "stale-input-refused" in out
    code, out = await update(
        server_address,
        handle.id,
        "resolve_gate",
        {"step": "ship", "decision": "approve", "token": "0-stale"},
    )
    assert code != 0 and "stale-gate-token" in out
    code, out = await update(
        server_address,
        handle.id,
        "resolve_gate",
        {"step": "nope", "decision": "approve", "token": token},
    )
    assert code != 0 and "unknown-step" in out
    code, out = await update(
        server_address,
        handle.id,
        "resolve_gate",
        {"step": "ship", "decision": "maybe", "token": token},
    )
    assert code != 0 and "invalid-decision" in out and "approve, revise, kill" in out
    assert await history_length(handle) == before  # refused updates left no trace in history

    # The signal form: a refusal is recorded as control.refused; a good decision goes through.
    code, out = await signal(
        server_address,
        handle.id,
        "resolve_gate_signal",
        {"step": "ship", "decision": "approve", "token": "x"},
    )
    assert code == 0, out
    code, out = await signal(
        server_address,
        handle.id,
        "resolve_gate_signal",
        {"step": "ship", "decision": "approve", "token": token},
    )
    assert code == 0, out
    result: PlanRunResult = await handle.result()
    assert result.outputs["ask"] == "ada" and result.outputs["ship"] == "approve"
    assert "Ship for ada." in result.outputs["done"]
    refused = [e for e in await events(handle) if e.type == "control.refused"]
    assert [e.data["reason"] for e in refused] == ["stale-gate-token"]
    assert any("stale-gate-token" in r for r in (await status(handle)).refused)


async def test_pause_resumed_by_signal_and_a_conflict_recorded(
    client: Client, worker_queue: str, server_address: str
) -> None:
    handle = await start(client, worker_queue, RELEASE)
    await wait_state(handle, "awaiting_input")
    code, out = await signal(
        server_address, handle.id, "resume_signal", {"args": {"approved_by": "eve"}}
    )
    assert code == 0, out
    gate = await wait_state(handle, "awaiting_gate")
    code, out = await signal(
        server_address, handle.id, "resume_signal", {"args": {"approved_by": "mal"}}
    )
    assert code == 0, out
    # The signal is in the history once the CLI returns, but its workflow task may not have run:
    # wait for the refusal to be recorded (under load 100 polls, about 5 s, were not always enough).
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not (await status(handle)).refused:
        assert loop.time() < deadline, "the stale resume was never refused"
        await asyncio.sleep(0.05)
    assert "stale-input-refused" in (await status(handle)).refused[0]
    await handle.execute_update(
        UPDATE_RESOLVE_GATE,
        ResolveGateInput(step="ship", decision="approve", token=gate.pending_gates[0].token),
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs["ask"] == "eve"


async def test_revise_rotates_the_token_resets_downstream_and_kill_fails(
    client: Client, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, RELEASE, args={"approved_by": "ada"})
    first = (await wait_state(handle, "awaiting_gate")).pending_gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="revise", token=first)
    )
    second_status = await wait_state(handle, "awaiting_gate")
    second = second_status.pending_gates[0].token
    assert second != first and second_status.pending_gates[0].round == 1
    with pytest.raises(WorkflowUpdateFailedError) as stale:
        await handle.execute_update(
            UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="approve", token=first)
        )
    assert "stale-gate-token" in str(stale.value.cause)
    drafts = [
        e for e in await events(handle) if e.type == "dispatched" and e.data["step"] == "draft"
    ]
    assert [e.data["invocation"] for e in drafts] == ["draft#1", "draft#2"]  # draft re-ran
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="kill", token=second)
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    assert isinstance(failed.value.cause, ApplicationError)
    assert failed.value.cause.type == "gate-killed"


async def test_a_second_revise_past_max_rounds_fails(client: Client, worker_queue: str) -> None:
    handle = await start(client, worker_queue, RELEASE, args={"approved_by": "ada"})
    for _ in range(2):
        token = (await wait_state(handle, "awaiting_gate")).pending_gates[0].token
        await handle.execute_update(
            UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="revise", token=token)
        )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    assert isinstance(failed.value.cause, ApplicationError)
    assert failed.value.cause.type == "gate-rounds-exhausted"


async def test_a_typed_pause_parses_json_and_checks_its_schema(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        {
            "id": "size",
            "kind": "pause",
            "pause": {
                "state": "AWAITING_SIZE",
                "resume_arg": "size",
                "schema": {
                    "type": "object",
                    "required": ["n"],
                    "properties": {"n": {"type": "integer"}},
                },
            },
        },
        agent("use", "Use ${steps.size.output.n} workers.", deps=["size"]),
    )
    handle = await start(client, worker_queue, plan)
    await wait_state(handle, "awaiting_input")
    with pytest.raises(WorkflowUpdateFailedError) as bad:
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"size": '{"n": "four"}'}))
    assert "size.n must be integer" in str(bad.value.cause)
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"size": '{"n": 4}'}))
    result: PlanRunResult = await handle.result()
    assert result.outputs["size"] == {"n": 4}
    assert "Use 4 workers." in result.outputs["use"]


async def test_a_bad_typed_arg_at_start_is_refused_as_input_not_as_a_plan_reason(
    client: Client, worker_queue: str
) -> None:
    # The plan's reasons are one closed enum; a start argument that does not parse is input
    # that does not decode, refused before the run opens like any other (input.invalid).
    plan = plan_doc(
        {
            "id": "size",
            "kind": "pause",
            "pause": {
                "state": "AWAITING_SIZE",
                "resume_arg": "size",
                "schema": {"type": "integer"},
            },
        },
        agent("use", "Use ${steps.size.output} workers.", deps=["size"]),
    )
    handle = await start(client, worker_queue, plan, args={"size": "four"})
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert cause.type == "input.invalid" and cause.message.startswith("args: size: ")
    shown = await status(handle)
    assert shown.state == "failed" and shown.reason == "input.invalid"
    assert [e.type for e in await events(handle)] == ["run.closed"]  # it never opened


def test_a_plan_failure_takes_only_a_member_of_the_closed_enum() -> None:
    import typing

    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure

    assert typing.get_type_hints(PlanFailure.__init__)["reason"] is Reason
