"""Where a ported flow would notice ledgers and counts (docs/plans.md, "Differences from the
reference interpreter"), on the real dev server: a revise gives the steps it resets fresh step
ledgers, a sub-flow ledger reserves per dispatch (a stratum flow's `dispatches` budget too), a
consumer step's retry and timeout defaults are told by ``validate``, and a run's closing count
is its ledger's after a revert."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from client.plan_follow import finish
from tests.cli import cli_env, ponder_here
from tests.plans.run_helpers import (
    agent,
    ended_with,
    plan_doc,
    start,
    status,
    trace,
    wait_state,
)
from tests.plans.test_run_consumer import consumer, done, issued
from worker.worker import WORKFLOWS
from workflows.names import UPDATE_RESOLVE_GATE, UPDATE_REVERT
from workflows.plan.checkpoints import RevertInput
from workflows.plan.run_types import PlanRunResult, ResolveGateInput
from workflows.plan.validate import validate_document
from workflows.plan_run.preflight import NESTED_LEDGERS_PATCH

# A one-call step, then a sub-flow of a one-call step: both re-run after the revise.
REVISED = plan_doc(
    agent("draft", "Draft.", "first draft", "second draft", budget={"calls": 1}),
    {"id": "r", "kind": "run", "flow": "one", "deps": ["draft"], "budget": {"calls": 2}},
    {"id": "g", "kind": "gate", "deps": ["r"], "gate": {"on_revise": "draft", "max_rounds": 1}},
    flows={"one": {"steps": [agent("a", "Polish.", "polished", "repolished",
                                   budget={"calls": 1})]}},
    budget={"calls": 4},
)  # fmt: skip


async def _decide(handle: Any, decision: str, *, after: str | None = None) -> str:
    """Decide the gate once it is open with a token other than ``after``; returns the token."""
    while True:
        gates = (await wait_state(handle, "awaiting_gate")).pending_gates
        if gates and gates[0].token != after:
            break
        await asyncio.sleep(0.05)  # the revise is applied on the run's next workflow task
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="g", decision=decision, token=gates[0].token)
    )
    return gates[0].token


async def test_a_revise_gives_the_steps_it_resets_fresh_step_ledgers(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, REVISED)
    first = await _decide(handle, "revise")
    await _decide(handle, "approve", after=first)
    result: PlanRunResult = await handle.result()
    assert result.outputs["draft"] == "second draft" and result.outputs["r/a"] == "repolished"
    final = await status(handle)
    ledgers = {n.owner: (n.scope, n.calls_spent, n.calls_limit) for n in final.ledgers}
    # Each step's own ledger holds its re-run alone; the sub-flow's and the run's keep counting.
    assert ledgers == {
        "draft": ("step", 1, 1), "r/a": ("step", 1, 1), "r": ("subflow", 2, 2),
    }  # fmt: skip
    assert final.budget and final.budget.calls_spent == result.calls == 4
    revise = next(r for r in trace(settings.runs_dir, handle.id) if r["type"] == "gate.revise")
    assert revise["data"]["ledgers_renewed"] == ["draft", "r/a"]
    # The rule is behind a patch marker: the run's own history replays with it.
    history = await handle.fetch_history()
    patches = [
        p.data
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        for p in e.marker_recorded_event_attributes.details["patch-data"].payloads
    ]
    assert any(NESTED_LEDGERS_PATCH.encode() in data for data in patches), patches
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    assert (await replayer.replay_workflow(history)).replay_failure is None


# A one-call child and a child of two attempts, under a sub-flow budget of two calls.
RETRIED = {
    "steps": [
        agent("a", "First."),
        agent("b", "Second.", out="Found", idempotent=True,
              retry={"max_attempts": 2, "on": ["malformed-output"]}),
    ]
}  # fmt: skip


def _retried(*outputs: str) -> dict[str, Any]:
    b = RETRIED["steps"][1] | {"x-sim": {"outputs": list(outputs)}}
    return plan_doc(
        {"id": "r", "kind": "run", "flow": "two", "budget": {"calls": 2}},
        flows={"two": {"steps": [RETRIED["steps"][0], b]}},
        contracts={"Found": {"items": "string[]"}},
    )


def test_validate_accepts_a_subflow_budget_below_the_sum_of_its_worst_cases() -> None:
    # 1 + 2 worst-case calls under calls=2: legal, as in the reference (each child fits alone).
    checked = validate_document(_retried('{"items": []}'))
    assert checked.ok, checked.errors


async def test_a_subflow_ledger_reserves_per_dispatch_not_each_childs_worst_case(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, _retried('{"items": ["x"]}'))
    result: PlanRunResult = await handle.result()
    assert result.outputs["r/b"] == '{"items": ["x"]}' and result.calls == 2
    (ledger,) = (await status(handle)).ledgers
    assert (ledger.owner, ledger.calls_spent, ledger.calls_limit) == ("r", 2, 2)


async def test_a_subflow_ledger_refuses_the_retry_that_would_overrun_it(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, _retried("not json", '{"items": []}'))
    error = await ended_with(handle)
    assert error.type == "subflow-budget-exhausted" and "r/b" in error.message
    rows = trace(settings.runs_dir, handle.id)
    # Both children dispatched, as the reference would; the retry of b is refused, not sent.
    assert [r["data"]["invocation"] for r in rows if r["type"] == "dispatched"] == [
        "r/a#1",
        "r/b#1",
    ]
    exhausted = next(r["data"] for r in rows if r["type"] == "budget.exhausted")
    assert (exhausted["ledger"], exhausted["owner"], exhausted["step"]) == ("subflow", "r", "r/b")
    assert "0 of calls=2 left" in exhausted["detail"]
    final = await status(handle)
    assert final.budget and final.budget.calls_spent == 2


# A stratum flow as a porter writes it: each `do` step may take two attempts (stratum's default),
# and the sub-flow's budget is exactly the two dispatches a clean run makes.
STRATUM = {
    "version": 1,
    "contracts": {"R": {"value": "string"}},
    "flows": {
        "entry": "main",
        "main": {
            "input": {"name": "string"},
            "output": {"from": "${polish.output}", "contract": "R"},
            "steps": [{"id": "polish", "run": "two", "with": {"name": "${input.name}"},
                       "budget": {"dispatches": 2}}],
        },
        "two": {
            "input": {"name": "string"},
            "output": {"from": "${b.output}", "contract": "R"},
            "steps": [
                {"id": "a", "do": "Outline ${input.name}.", "out": "R",
                 "x-sim": {"outputs": ['{"value": "outline"}']}},
                {"id": "b", "do": "Write it.", "out": "R", "after": ["a"],
                 "x-sim": {"outputs": ['{"value": "written"}']}},
            ],
        },
    },
}  # fmt: skip


async def test_a_stratum_sub_flow_budget_of_its_dispatches_runs_unchanged(
    client: Client, worker_queue: str
) -> None:
    assert validate_document(STRATUM).ok
    handle = await start(
        client, worker_queue, STRATUM, args={"name": "ponder"},
        executors={"claude": "sim:default"}, default_family="claude",
    )  # fmt: skip
    result: PlanRunResult = await handle.result()
    assert result.outputs["main:output"] == {"value": "written"} and result.calls == 2
    (ledger,) = (await status(handle)).ledgers
    assert (ledger.owner, ledger.calls_spent, ledger.calls_limit) == ("polish", 2, 2)


CONSUMERS = plan_doc(
    consumer("build", "Build."),
    consumer("tested", "Test.", deps=["build"], timeout_ms=60_000, idempotent=True,
             retry={"max_attempts": 2, "on": ["transport"]}),
    {"id": "r", "kind": "run", "flow": "f", "deps": ["tested"]},
    flows={"f": {"steps": [consumer("inner", "Inner.", timeout_ms=1000)]}},
)  # fmt: skip


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_validate_notes_each_consumer_step_on_ponder_defaults(tmp_path: Path) -> None:
    file = _write(tmp_path, CONSUMERS)
    text = ponder_here("plan", "validate", file, env=cli_env(tmp_path))
    assert text.code == 0, text.err
    notes = [line for line in text.err.splitlines() if ": note: " in line]
    assert len(notes) == 2  # "tested" chose both: nothing to tell
    build, inner = notes
    assert ": note: consumer-defaults: step build (dispatch: consumer)" in build
    assert "not retried" in build and "list transport in retry.on" in build
    assert "900000 ms" in build and "set timeout_ms" in build
    assert "flow f step inner (dispatch: consumer)" in inner and "timeout" not in inner
    shown = ponder_here("plan", "validate", "--format", "json", file, env=cli_env(tmp_path))
    assert shown.code == 0, shown.err
    out = json.loads(shown.out)
    assert out["valid"] and out["notes"] == [n.split(": note: ", 1)[1] for n in notes]


async def test_the_closing_count_is_the_ledgers_after_a_revert_abandons_a_consumer(
    client: Client, worker_queue: str, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = plan_doc(
        agent("a", "A.", checkpoint="start"), consumer("b", "B.", deps=["a"]), budget={"calls": 5}
    )
    handle = await start(client, worker_queue, plan)
    first = (await issued(handle)).issuances[0]
    await handle.execute_update(UPDATE_REVERT, RevertInput(label="start"))
    second = (await issued(handle, after={first.token})).issuances[0]
    await done(handle, "b", second.token, {"output": "built"})
    result: PlanRunResult = await handle.result()
    final = await status(handle)
    # a, the abandoned b and the answered b: three calls spent, one number everywhere
    assert final.budget and final.budget.calls_spent == 3
    assert result.calls == 3 and result.invocations == 3
    with pytest.raises(SystemExit):
        finish(result)  # the closing line `ponder plan run` prints
    assert f"-- run {handle.id} completed: 3 calls" in capsys.readouterr().err
    run_dir = settings.runs_dir / handle.id
    rows = [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]
    assert [(r["invocation"], r["outcome"]) for r in rows] == [
        ("a#1", "ok"), ("b#1", "reverted"), ("b#2", "ok"),
    ]  # fmt: skip
    assert json.loads((run_dir / "cost.json").read_text())["calls"] == 3
    settled = [r["data"] for r in trace(settings.runs_dir, handle.id) if r["type"] == "settled"]
    assert {"invocation": "b#1", "ok": False, "failure": "reverted"}.items() <= settled[1].items()
