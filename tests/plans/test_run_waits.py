"""A person's wait is not charged to the wall budget, and ``status`` shows it apart.

The plan's wall budget leaves 3 s of slack beyond the first agent step's reservation: the
second agent step fits only if the human gate and the pause before it (about 1.6 s each, 3.2 s
together) are not counted. Were they charged, the run would pause ``awaiting_wall_clock`` before
``b``. The slack is what the two agent steps may really take: about 70 ms on an idle machine,
more under load (2 cores, ``-n 6``), where 1.5 s left too little margin.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.config import Settings
from client.plan_display import print_plan_status
from tests.plans.run_helpers import agent, events, plan_doc, start, status, wait_state
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.run_types import ResolveGateInput, ResumeInput

STAGE_MS = 20_000
SLACK_MS = 3_000  # below the two waits together (2 * WAIT_S), above what a and b take
WAIT_S = 1.6
WHO_SCHEMA = {"type": "string", "minLength": 1}

WAITS = plan_doc(
    agent("a", "Draft.", "draft", timeout_ms=STAGE_MS),
    {"id": "ok", "kind": "gate", "deps": ["a"], "gate": {}},
    {
        "id": "who",
        "kind": "pause",
        "deps": ["ok"],
        "pause": {"state": "AWAITING_OWNER", "resume_arg": "who", "schema": WHO_SCHEMA},
    },
    agent("b", "Sign for ${input.who}.", "signed", deps=["who"], timeout_ms=STAGE_MS),
    budget={"wall_ms": STAGE_MS + SLACK_MS},
)


async def test_human_waits_are_not_charged_to_the_wall_budget(
    client: Client, worker_queue: str, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    handle = await start(client, worker_queue, WAITS)
    at_gate = await wait_state(handle, "awaiting_gate")
    assert at_gate.budget is not None and at_gate.budget.waited_ms == 0
    assert at_gate.waiting_since is not None
    print_plan_status(at_gate, as_json=False)
    shown = capsys.readouterr().out
    assert f"ms left of {STAGE_MS + SLACK_MS} ms" in shown and "waiting since" in shown
    assert f"gate     ok token {at_gate.pending_gates[0].token}" in shown

    # A person's wait has to last for real: its length is what the budget must not charge.
    await asyncio.sleep(WAIT_S)
    token = at_gate.pending_gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="ok", decision="approve", token=token)
    )
    at_pause = await wait_state(handle, "awaiting_input")
    assert at_pause.budget is not None and at_pause.budget.waited_ms >= WAIT_S * 1000
    assert at_pause.budget.wall_spent_ms < SLACK_MS
    print_plan_status(at_pause, as_json=False)
    shown = capsys.readouterr().out
    assert f"pause    who (AWAITING_OWNER) resume_arg who schema {json.dumps(WHO_SCHEMA)}" in shown

    await asyncio.sleep(WAIT_S)  # the second wait, as real as the first
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"who": '"ada"'}))
    await wait_state(handle, "completed")  # "still awaiting_wall_clock" if charged
    await handle.result()  # its files are written once it has ended
    done = await status(handle)
    budget = done.budget
    assert budget is not None and done.waiting_since is None
    assert budget.waited_ms >= 2 * WAIT_S * 1000 > SLACK_MS
    assert budget.wall_spent_ms < SLACK_MS
    assert budget.wall_left_ms == STAGE_MS + SLACK_MS - budget.wall_spent_ms
    ends = {e.type: e.data for e in await events(handle) if e.type in ("gate.decided", "resumed")}
    assert ends["gate.decided"]["waited_ms"] >= WAIT_S * 1000
    assert ends["resumed"]["waited_ms"] >= WAIT_S * 1000
    assert ends["gate.decided"]["waited_ms"] + ends["resumed"]["waited_ms"] == budget.waited_ms
    cost = json.loads((settings.runs_dir / handle.id / "cost.json").read_text())
    assert cost["waited_ms"] == budget.waited_ms and cost["elapsed_ms"] >= budget.waited_ms
    assert cost["wall_ms"] == budget.wall_spent_ms  # what status says was charged


async def test_a_wait_cut_short_by_cancellation_is_still_counted(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, WAITS)
    await wait_state(handle, "awaiting_gate")
    await asyncio.sleep(0.5)  # a wait of known length (counted below) for the cancel to cut
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):  # once it has ended, its files are written
        await handle.result()
    done = await status(handle)
    assert done.state == "cancelled"
    assert done.budget is not None and done.budget.waited_ms >= 500
    assert done.waiting_since is None and done.pending_gates == []
    cost = json.loads((settings.runs_dir / handle.id / "cost.json").read_text())
    assert cost["outcome"] == "cancelled" and cost["waited_ms"] == done.budget.waited_ms
