"""Every reason of the closed enum is produced by a plan fixture run through ``PlanRun``.

Each ``tests/plans/reasons/<reason>.yaml`` is a plan whose ``x-fixture`` says how to run it (run
input, workspace links, a git repository as the workspace, the control actions to take at each
pause) and what must come out: the
reason and the exit code the CLI gives that outcome (1 failed, 75 paused, 2 refused control).
Nothing here constructs an error: every reason comes from the workflow.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply, Seen, openai_completion
from tests.plans.run_helpers import start, status
from tests.plans.test_run_worktrees import WRITER as WORKTREE_WRITER
from tests.plans.test_run_worktrees import make_repo
from worker.worker import WorkerOptions, running_worker
from workflows.names import (
    UPDATE_CHECKPOINT,
    UPDATE_EXTEND_BUDGET,
    UPDATE_RESOLVE_GATE,
    UPDATE_RESUME,
    UPDATE_REVERT,
    UPDATE_STEP_DONE,
)
from workflows.plan.checkpoints import CheckpointInput, RevertInput
from workflows.plan.consumer import StepDoneInput
from workflows.plan.document import parse_text
from workflows.plan.reasons import Reason
from workflows.plan.run_types import ExtendPlanBudgetInput, ResolveGateInput, ResumeInput

FIXTURES = sorted((Path(__file__).parent / "reasons").glob("*.yaml"))
UNREACHABLE = {
    Reason.BUDGET_INVARIANT_VIOLATED: "a spend outside its reservation means the reservation "
    "arithmetic is wrong; no valid plan can make it happen, which is the point of the check",
}
TESTED_ELSEWHERE = {
    Reason.EXPR_TOO_COSTLY: "a run must first spend 20 s of evaluator time: "
    "tests/plans/test_cel_share.py refuses a run past it, tests/hostile/test_cel_fairness.py "
    "ends costly runs with it",
}
EXIT = {"failed": 1, "paused": 75, "refused": 2}


def load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    doc, errors = parse_text(path.read_text(), filename=str(path))
    assert not errors, errors
    fixture = doc.pop("x-fixture")
    return doc, fixture


def test_every_reason_has_a_fixture() -> None:
    stems = {p.stem for p in FIXTURES}
    exempt = UNREACHABLE.keys() | TESTED_ELSEWHERE.keys()
    missing = [r.value for r in Reason if r.value not in stems and r not in exempt]
    assert missing == []
    assert not [r for r in exempt if r.value in stems]
    for path in FIXTURES:
        _, fixture = load(path)
        assert fixture["reason"] == path.stem
        assert Reason(path.stem)  # only members of the enum


def refuse_on_policy(seen: Seen) -> Reply:
    prompt = next(m["content"] for m in seen.body["messages"] if m["role"] == "user")
    finish = "content_filter" if "[policy]" in prompt else "stop"
    return Reply(body=openai_completion("ok", finish_reason=finish))


@pytest.fixture
async def fixture_queue(client: Client, settings: Settings) -> AsyncIterator[str]:
    fake = FakeProvider(refuse_on_policy)
    settings = with_endpoint(settings, "fake", Endpoint(kind="openai", base_url=fake.url))
    # writer:agent writes the files its fan-out item names (tests/plans/worktree_writer.py).
    writer = Endpoint(kind="command", argv=[sys.executable, str(WORKTREE_WRITER)])
    settings = with_endpoint(settings, "writer", writer)
    queue = f"test-{uuid.uuid4()}"
    try:
        async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
            yield queue
    finally:
        fake.close()


async def next_stop(handle: WorkflowHandle, answered: tuple[Any, ...] | None) -> Any:
    """The run's next pause (its status) or its end (None), past the pause just answered."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while loop.time() < deadline:
        described = await handle.describe()
        if described.status != WorkflowExecutionStatus.RUNNING:
            return None
        current = await status(handle)
        mark = _mark(current)
        if current.state.startswith("awaiting_") and mark != answered:
            return current
        await asyncio.sleep(0.05)
    raise AssertionError("the run neither paused nor ended")


def _mark(s: Any) -> tuple[Any, ...]:
    """What makes a stop new: its state and step, its gates' and issuances' tokens."""
    return (
        s.state,
        s.step,
        tuple(g.token for g in s.pending_gates),
        tuple(i.token for i in s.issuances),
    )


async def act_on_run(handle: WorkflowHandle, action: dict[str, Any], paused: Any) -> bool:
    """The consumer and checkpoint actions (docs/plans.md, "Consumer steps" and "Checkpoints");
    False: not one of them."""
    if "step_done" in action:
        live = {(i.step, i.item): i.token for i in paused.issuances}
        token = action.get("token") or live.get((action["step_done"], action.get("item")), "")
        done = StepDoneInput(step=action["step_done"], token=token, result=action["result"])
        await handle.execute_update(UPDATE_STEP_DONE, done)
    elif "checkpoint" in action:
        await handle.execute_update(UPDATE_CHECKPOINT, CheckpointInput(label=action["checkpoint"]))
    elif "revert" in action:
        await handle.execute_update(UPDATE_REVERT, RevertInput(label=action["revert"]))
    else:
        return False
    return True


async def act(handle: WorkflowHandle, action: dict[str, Any], tokens: dict[str, str]) -> None:
    if "wait" in action:  # nobody answers this stop: the run moves on by itself (a deadline)
        return
    if "resume" in action:
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args=action["resume"]))
    elif "extend" in action:
        await handle.execute_update(UPDATE_EXTEND_BUDGET, ExtendPlanBudgetInput(**action["extend"]))
    else:
        token = action.get("token") or tokens.get(action["step"], "none")
        decision = ResolveGateInput(step=action["step"], decision=action["gate"], token=token)
        await handle.execute_update(UPDATE_RESOLVE_GATE, decision)


async def drive(handle: WorkflowHandle, actions: list[dict[str, Any]]) -> tuple[str, str]:
    """(outcome, reason) once the run fails, pauses with no action left, or refuses one."""
    answered = None
    while True:
        paused = await next_stop(handle, answered)
        if paused is None:
            with pytest.raises(WorkflowFailureError) as failed:
                await handle.result()
            cause = failed.value.cause
            assert isinstance(cause, ApplicationError) and cause.type
            return "failed", cause.type
        if not actions:
            assert paused.reason is not None
            return "paused", paused.reason
        tokens = {g.step: g.token for g in paused.pending_gates}
        try:
            action = actions.pop(0)
            if not await act_on_run(handle, action, paused):
                await act(handle, action, tokens)
        except WorkflowUpdateFailedError as exc:
            assert not actions, f"an action was refused early: {exc.cause!r}"
            cause = exc.cause
            assert isinstance(cause, ApplicationError)
            return "refused", cause.message.split(":")[0]
        answered = _mark(paused)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
async def test_the_fixture_produces_its_reason(
    path: Path, client: Client, fixture_queue: str, tmp_path: Path
) -> None:
    plan, fixture = load(path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, target in fixture.get("links", {}).items():
        (workspace / name).symlink_to(target)
    if fixture.get("git"):  # a git repository with one commit (worktree fan-outs)
        make_repo(workspace / "repo")
        workspace = workspace / "repo"
    run_input = dict(fixture.get("input", {}))
    if "big_arg" in fixture:
        run_input["args"] = {"big": "x" * fixture["big_arg"]}
    handle = await start(client, fixture_queue, plan, workspace=str(workspace), **run_input)
    outcome, reason = await drive(handle, list(fixture.get("actions", [])))
    assert reason == fixture["reason"], (outcome, reason)
    assert EXIT[outcome] == fixture["exit"]
    if outcome == "paused":
        assert (await status(handle)).state == fixture["state"]
        await handle.terminate("fixture done")
