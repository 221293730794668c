"""A gate's deadline seen and answered from outside: ``ponder status|gate`` and plain ``temporal``
(update and signal forms). Once the deadline has decided, the gate's token is void everywhere.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from activities.config import Settings
from tests.cli import cli_env, ponder
from tests.plans.run_helpers import events, plan_doc, start, status
from tests.plans.test_run_control import history_length, signal, update
from tests.plans.test_run_gate_deadlines import until
from workflows.names import UPDATE_RESOLVE_GATE
from workflows.plan.run_types import PlanRunResult, ResolveGateInput

PLAN = plan_doc(
    {"id": "ship", "kind": "gate", "gate": {"deadline": 1000, "default": "approve"}},
    {
        "id": "confirm",
        "kind": "gate",
        "deps": ["ship"],
        "gate": {"deadline": 600_000, "default": "kill", "escalate": {"after_ms": 1000}},
    },
)


async def test_a_late_decision_is_stale_from_ponder_and_temporal(
    client: Client, worker_queue: str, server_address: str, settings: Settings, tmp_path: Path
) -> None:
    handle = await start(client, worker_queue, PLAN)
    first = await until(handle, lambda s: s.pending_gates and s.pending_gates[0].step == "ship")
    old = first.pending_gates[0].token
    # ship's deadline approves; confirm waits and escalates (no notifier: the flag alone).
    waiting = await until(
        handle, lambda s: s.pending_gates and s.pending_gates[0].step == "confirm"
    )
    assert waiting.deadline_decided == ["ship"]
    await until(handle, lambda s: s.pending_gates and s.pending_gates[0].escalated)

    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=worker_queue)
    shown = await ponder("status", handle.id, env=env)
    assert shown.code == 0, shown.err
    assert "deadline " in shown.out and ": then kill" in shown.out
    assert "escalated at " in shown.out
    late = await ponder("gate", "kill", handle.id, "ship", env=env)
    assert late.code == 2 and "stale-gate-token" in late.err, late

    before = await history_length(handle)
    code, out = await update(
        server_address,
        handle.id,
        UPDATE_RESOLVE_GATE,
        {"step": "ship", "decision": "kill", "token": old},
    )
    assert code != 0 and "stale-gate-token" in out, out
    assert await history_length(handle) == before  # the validator refused it: no history
    code, out = await signal(
        server_address,
        handle.id,
        "resolve_gate_signal",
        {"step": "ship", "decision": "kill", "token": old},
    )
    assert code == 0, out
    refused = await until(handle, lambda s: bool(s.refused))
    assert "stale-gate-token" in refused.refused[0]

    token = (await status(handle)).pending_gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="confirm", decision="approve", token=token)
    )
    result: PlanRunResult = await handle.result()
    assert result.outputs == {"ship": "approve", "confirm": "approve"}
    kinds = [e.type for e in await events(handle)]
    assert kinds.count("gate.defaulted") == 1 and kinds.count("gate.escalated") == 1
    assert kinds.count("control.refused") == 1
