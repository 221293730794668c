"""Checkpoints (docs/plans.md, "Checkpoints") through a real ``PlanRun``: commits by step and by
operator, a revert at a gate (the old token refused, ledgers unchanged), a revert while a
consumer waits, the signal and ``temporal`` forms, and ``--from RUN:LABEL`` reusing only steps
whose fingerprint matches and whose declared writes exist."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from client.read_tokens import read_token
from tests.plans.run_helpers import agent, events, plan_doc, start, status, wait_state
from tests.plans.test_run_consumer import consumer, done, issued
from tests.plans.test_run_control import signal, update
from worker.worker import WorkerOptions, running_worker
from workflows.call_options import CallOptions
from workflows.names import UPDATE_CHECKPOINT, UPDATE_RESOLVE_GATE, UPDATE_REVERT
from workflows.plan.checkpoints import CheckpointInput, RevertInput
from workflows.plan.run_types import FromCheckpoint, PlanRunResult, ResolveGateInput
from workflows.plan.training import safe_name

REVIEWED = plan_doc(
    agent("draft", "Draft.", checkpoint="drafted"),
    agent("review", "Review ${steps.draft.output}.", deps=["draft"]),
    {"id": "ship", "kind": "gate", "deps": ["review"], "gate": {}},
    agent("announce", "Announce.", deps=["ship"]),
    budget={"calls": 6},  # a revert buys no calls back: the re-run review is paid again
)


def _from(settings: Settings, run_id: str, label: str) -> dict[str, Any]:
    """``from_checkpoint`` with the source's read token, as the CLI sends it."""
    token = read_token(settings.runs_dir, run_id)
    assert token is not None
    return {
        "from_checkpoint": FromCheckpoint(run_id=run_id, label=label),
        "calls": CallOptions(read_tokens={run_id: token}),
    }


def _cause(exc: WorkflowUpdateFailedError) -> str:
    cause = exc.cause
    assert isinstance(cause, ApplicationError)
    return cause.message


async def test_revert_at_a_gate_rotates_its_token_and_never_restores_the_ledger(
    client: Client, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, REVIEWED)
    gate = await wait_state(handle, "awaiting_gate")
    old = gate.pending_gates[0].token
    assert gate.checkpoints == ["drafted"] and gate.budget is not None
    spent = gate.budget.calls_spent
    # An operator commit at the gate: always accepted, labels in first-commit order.
    committed = await handle.execute_update(UPDATE_CHECKPOINT, CheckpointInput(label="at-gate"))
    assert committed["labels"] == ["drafted", "at-gate"]
    assert committed["settled"] == ["draft", "review"]

    reverted = await handle.execute_update(UPDATE_REVERT, RevertInput(label="drafted"))
    assert reverted["restored"] == ["draft"] and reverted["resumes_at"] == "review"
    assert reverted["rotated"] == 1
    with pytest.raises(WorkflowUpdateFailedError) as stale:
        await handle.execute_update(
            UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="approve", token=old)
        )
    assert _cause(stale.value).startswith("stale-gate-token")

    again = await wait_state(handle, "awaiting_gate")
    new = again.pending_gates[0].token
    assert new != old
    assert again.budget is not None and again.budget.calls_spent == spent + 1  # review re-ran
    assert again.checkpoints == ["drafted", "at-gate"]  # a revert drops no label
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="approve", token=new)
    )
    result: PlanRunResult = await handle.result()
    assert result.calls == spent + 2
    reviews = [
        e for e in await events(handle) if e.type == "dispatched" and e.data["step"] == "review"
    ]
    assert [e.data["invocation"] for e in reviews] == ["review#1", "review#2"]


async def test_revert_while_a_consumer_waits_voids_its_token(
    client: Client, worker_queue: str, server_address: str
) -> None:
    plan = plan_doc(
        agent("a", "A.", checkpoint="start"), consumer("b", "B.", deps=["a"]), budget={"calls": 5}
    )
    handle = await start(client, worker_queue, plan)
    first = (await issued(handle)).issuances[0]
    # Refusals through the plain CLI: a bad label, an unknown one.
    code, out = await update(server_address, handle.id, "revert", {"label": "no spaces"})
    assert code != 0 and "invalid-label" in out
    code, out = await update(server_address, handle.id, "revert", {"label": "nope"})
    assert code != 0 and "checkpoint-not-found" in out and "start" in out
    # The signal form reverts too.
    code, out = await signal(server_address, handle.id, "revert_signal", {"label": "start"})
    assert code == 0, out
    second = (await issued(handle, after={first.token})).issuances[0]
    assert second.token != first.token and second.epoch == first.epoch + 1
    with pytest.raises(WorkflowUpdateFailedError) as stale:
        await done(handle, "b", first.token, {"output": "late"})
    assert _cause(stale.value).startswith("stale-dispatch-token")
    await done(handle, "b", second.token, {"output": "on time"})
    result: PlanRunResult = await handle.result()
    assert result.outputs["b"] == "on time"
    types = [e.type for e in await events(handle)]
    assert types.count("consumer.issued") == 2 and "checkpoint.reverted" in types


async def _killed_run(client: Client, queue: str, plan: dict[str, Any], **fields: Any) -> str:
    handle = await start(client, queue, plan, **fields)
    gate = await wait_state(handle, "awaiting_gate")
    token = gate.pending_gates[0].token
    await handle.execute_update(
        UPDATE_RESOLVE_GATE, ResolveGateInput(step="ship", decision="kill", token=token)
    )
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    return handle.id


def _from_plan(review_prompt: str) -> dict[str, Any]:
    return plan_doc(
        agent("notes", "Notes.", artifacts={"writes": ["notes.md"]}),
        agent("draft", "Draft."),
        agent("review", review_prompt, deps=["draft"]),
        agent("final", "Final ${steps.review.output}.", deps=["review"], checkpoint="reviewed"),
        {"id": "ship", "kind": "gate", "deps": ["final", "notes"], "gate": {}},
        agent("after", "After.", deps=["ship"], checkpoint="shipped"),
    )


async def test_a_new_run_from_a_failed_runs_checkpoint_reuses_only_matching_steps(
    client: Client, worker_queue: str, settings: Settings, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes\n")
    first = await _killed_run(
        client, worker_queue, _from_plan("Review ${steps.draft.output}."), workspace=str(workspace)
    )
    saved = json.loads((settings.runs_dir / first / "checkpoints.json").read_text())
    assert [c["label"] for c in saved["checkpoints"]] == ["reviewed"]
    assert sorted(saved["checkpoints"][0]["steps"]) == ["draft", "final", "notes", "review"]

    # notes' declared write is gone, so it runs again; draft matches and is restored; review's
    # prompt changed (its first line, which the sim answers), so it runs live, and final, whose
    # dep's output changed with it, too.
    (workspace / "notes.md").unlink()
    handle = await start(
        client,
        worker_queue,
        _from_plan("Again, review ${steps.draft.output}."),
        workspace=str(workspace),
        **_from(settings, first, "reviewed"),
    )
    gate = await wait_state(handle, "awaiting_gate")
    assert gate.resumed == ["draft"]
    dispatched = [e.data["step"] for e in await events(handle) if e.type == "dispatched"]
    assert dispatched == ["notes", "review", "final"]
    restored = [e for e in await events(handle) if e.type == "settled" and e.data.get("resumed")]
    assert [(e.data["step"], e.data["source"]) for e in restored] == [
        ("draft", f"{first}:reviewed")
    ]
    await handle.terminate("done")


async def test_from_an_unchanged_plan_reuses_every_settled_step(
    client: Client, worker_queue: str, settings: Settings, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes\n")
    plan = _from_plan("Review ${steps.draft.output}.")
    first = await _killed_run(client, worker_queue, plan, workspace=str(workspace))
    handle = await start(
        client,
        worker_queue,
        plan,
        workspace=str(workspace),
        **_from(settings, first, "reviewed"),
    )
    await wait_state(handle, "awaiting_gate")
    assert [e for e in await events(handle) if e.type == "dispatched"] == []  # nothing ran
    assert (await status(handle)).resumed == ["notes", "draft", "review", "final"]
    await handle.terminate("done")


async def test_from_an_unknown_label_is_refused_before_the_run_opens(
    client: Client, worker_queue: str, settings: Settings, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes\n")
    plan = _from_plan("Review.")
    first = await _killed_run(client, worker_queue, plan, workspace=str(workspace))
    # A run that does not exist is indistinguishable from a wrong token: no existence oracle.
    nobody = {
        "from_checkpoint": FromCheckpoint(run_id="plan-none-such", label="reviewed"),
        "calls": CallOptions(read_tokens={"plan-none-such": "0" * 32}),
    }
    for source, code in (
        (_from(settings, first, "never"), "checkpoint-not-found"),
        (nobody, "run.capability_invalid"),
    ):
        handle = await start(client, worker_queue, plan, workspace=str(workspace), **source)
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == code, cause
        assert [e.type for e in await events(handle)] == ["run.closed"]
    await asyncio.sleep(0)


async def test_a_restored_agent_step_is_backfilled_as_a_training_pair_once(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    plan = plan_doc(
        agent("draft", "Draft notes.", "the notes", checkpoint="drafted"),
        {"id": "ship", "kind": "gate", "deps": ["draft"], "gate": {}},
        name="Backfill",
        training_pairs=True,
    )
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    queue = f"test-{uuid.uuid4()}"
    worker = settings.model_copy(update={"training_dir": first_dir})
    async with running_worker(client, worker, WorkerOptions(task_queue=queue)):
        first = await _killed_run(client, queue, plan)
    assert len(_pairs(first_dir, "draft")) == 1  # captured live
    worker = settings.model_copy(update={"training_dir": second_dir})
    async with running_worker(client, worker, WorkerOptions(task_queue=queue)):
        kinds = []
        for _ in range(2):  # two runs backfilling the same pair: one line in each run's file
            handle = await start(client, queue, plan, **_from(settings, first, "drafted"))
            await wait_state(handle, "awaiting_gate")
            kinds.append([e.type for e in await events(handle) if e.type.startswith("capture.")])
            await handle.terminate("done")
    assert kinds == [["capture.written"], ["capture.written"]]
    pair, _ = _pairs(second_dir, "draft")
    assert (pair["capture_mode"], pair["resumed"], pair["output"]) == (
        "backfill",
        True,
        "the notes",
    )
    assert pair["input"] == _pairs(first_dir, "draft")[0]["input"]  # the same prompt, one key
    assert pair["key"] == _pairs(first_dir, "draft")[0]["key"]


def _pairs(root: Path, step: str) -> list[dict[str, Any]]:
    paths = sorted((root / safe_name("Backfill")).glob(f"*/{safe_name(step)}.jsonl"))
    return [json.loads(line) for path in paths for line in path.read_text().splitlines()]


async def test_revert_while_fanout_items_and_a_flow_child_wait_for_consumers(
    client: Client, worker_queue: str
) -> None:
    plan = plan_doc(
        agent("a", "A.", checkpoint="start"),
        {
            "id": "fan",
            "kind": "fanout",
            "deps": ["a"],
            "fanout": {"over": ["x", "y"], "chain": ["fan.do"], "concurrency": 2},
            "checkpoint": "fanned",
        },
        consumer("fan.do", "Do the item."),
        {"id": "r", "kind": "run", "deps": ["fan"], "flow": "finish"},
        flows={"finish": {"steps": [consumer("do", "Finish it.")]}},
        budget={"calls": 12},
    )
    handle = await start(client, worker_queue, plan)
    first = await issued(handle, count=2)
    await handle.execute_update(UPDATE_REVERT, RevertInput(label="start"))  # both items wait
    seen = {i.token for i in first.issuances}
    again = await issued(handle, count=2, after=seen)
    for i in again.issuances:
        await done(handle, "fan.do", i.token, {"output": f"item {i.item}"})
    child = (await issued(handle, after=seen | {i.token for i in again.issuances})).issuances[0]
    assert child.step == "r/do"
    reverted = await handle.execute_update(UPDATE_REVERT, RevertInput(label="fanned"))
    assert reverted["resumes_at"] == "r" and reverted["rotated"] == 1
    child_again = (await issued(handle, after={child.token})).issuances[0]
    assert child_again.step == "r/do" and child_again.token != child.token
    await done(handle, "r/do", child_again.token, {"output": "finished"})
    result: PlanRunResult = await handle.result()
    assert result.outputs["fan"] == ["item 0", "item 1"] and result.outputs["r"] == "finished"
