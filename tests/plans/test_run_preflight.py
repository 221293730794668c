"""Preflight refusals in their fixed order, the QE waiver, and the landed barrier on real files."""

from __future__ import annotations

import copy
import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.plans.helpers import LOOP_EXAMPLE_PATH
from tests.plans.run_helpers import agent, failure, plan_doc, run, start, trace, wait_state
from worker.worker import WorkerOptions, running_worker
from workflows.names import UPDATE_RESUME
from workflows.plan.run_types import PlanRunResult, ResumeInput

EXECUTORS = {"claude": "sim:default", "openai": "sim:default"}


def loop_example(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(LOOP_EXAMPLE_PATH.read_text())
    doc.update(changes)
    return copy.deepcopy(doc)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "request.md").write_text("Add a flag.\n")
    return root


async def test_preflight_refuses_in_the_spec_order(
    client: Client, worker_queue: str, workspace: Path, tmp_path: Path
) -> None:
    # Everything is wrong at once; each fix uncovers the next refusal, in order.
    (tmp_path / "elsewhere").mkdir()
    (workspace / "docs" / "plan.md").symlink_to(tmp_path / "elsewhere" / "plan.md")
    no_trace = loop_example(trace={"emit": False})
    common = {"workspace": str(workspace), "coder_family": "claude"}
    error = await failure(client, worker_queue, no_trace, **common)
    assert error.type == "trace-emit-required"
    error = await failure(client, worker_queue, loop_example(), **common)
    assert error.type == "plan-model-unroutable" and "plan (model sonnet)" in error.message
    error = await failure(client, worker_queue, loop_example(), executors=EXECUTORS, **common)
    assert error.type == "artifact-path-escapes-root" and "docs/plan.md" in error.message
    (workspace / "docs" / "plan.md").unlink()
    error = await failure(client, worker_queue, loop_example(), executors=EXECUTORS, **common)
    assert error.type == "same-family-qe-refused" and "'review'" in error.message
    error = await failure(
        client, worker_queue, loop_example(), executors=EXECUTORS, budget={"calls": 1},
        workspace=str(workspace), coder_family="openai",
    )  # fmt: skip
    assert error.type == "reservation-unsatisfiable" and "calls=1" in error.message


async def test_a_same_family_qe_waiver_is_loud_and_owes_a_re_qe(
    client: Client, worker_queue: str, workspace: Path, settings: Settings
) -> None:
    plan = plan_doc(
        agent("code", "Write it.", "done"),
        agent("qe", "Review.", "GATE: PASS", kind="gate", deps=["code"], model="opus", role="qe"),
        {
            "id": "hold",
            "kind": "pause",
            "deps": ["qe"],
            "pause": {"state": "HOLD", "resume_arg": "go"},
        },
    )
    handle = await start(
        client, worker_queue, plan, executors=EXECUTORS, coder_family="claude",
        allow_same_family_qe=True,
    )  # fmt: skip
    paused = await wait_state(handle, "awaiting_input")
    assert len(paused.waivers) == 1 and paused.waivers[0].startswith("WAIVER")
    assert "a re-QE is owed (reqe-due.json)" in paused.waivers[0]
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"go": "yes"}))
    result: PlanRunResult = await handle.result()
    assert result.outputs["qe"] == "GATE: PASS"
    # The debt is a record in the run directory, as the reference's reqe-due-1 is.
    debt = json.loads((settings.runs_dir / handle.id / "reqe-due.json").read_text())
    assert debt["schema"] == "ponder-reqe-due/1" and debt["steps"] == ["qe"]
    assert debt["coder_family"] == debt["qe_family"] == "claude"
    assert debt["run_id"] == handle.id and "independent review is owed" in debt["reason"]

    # Without --coder-family nothing can be checked, and the trace says so (no debt either).
    handle = await start(client, worker_queue, plan, executors=EXECUTORS)
    await wait_state(handle, "awaiting_input")
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"go": "yes"}))
    await handle.result()
    rows = trace(settings.runs_dir, handle.id)
    assert [r["data"]["step"] for r in rows if r["type"] == "qe.unchecked"] == ["qe"]
    assert not (settings.runs_dir / handle.id / "reqe-due.json").exists()


def file_step(step_id: str = "write", **fields: Any) -> dict[str, Any]:
    return agent(
        step_id, "Write notes.\ntarget: ${input.target}", "ok", deliverable="file",
        artifacts={"writes": ["out/notes.md"]}, **fields,
    )  # fmt: skip


async def test_a_file_not_written_or_left_unchanged_is_not_landed(
    client: Client, worker_queue: str, workspace: Path
) -> None:
    target = workspace / "out" / "notes.md"
    args = {"target": str(target)}
    plan = plan_doc(file_step())
    error = await failure(client, worker_queue, plan, workspace=str(workspace), args=args)
    assert (
        error.type == "deliverable-not-landed" and "out/notes.md was not written" in error.message
    )
    target.parent.mkdir()
    target.write_text("old\n")
    error = await failure(client, worker_queue, plan, workspace=str(workspace), args=args)
    assert error.type == "deliverable-not-landed" and "unchanged from before" in error.message


WRITER = """
import sys
text = sys.stdin.read()
target = next(l.split(": ", 1)[1] for l in text.splitlines() if l.startswith("target: "))
with open(target, "w") as f:
    f.write("landed\\n")
print("wrote " + target)
"""


@pytest.fixture
async def writer_queue(client: Client, settings: Settings, tmp_path: Path) -> AsyncIterator[str]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    settings = with_endpoint(
        settings, "writer", Endpoint(kind="command", argv=[sys.executable, str(script)])
    )
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


async def test_a_written_file_lands_and_a_symlink_planted_after_preflight_is_refused(
    client: Client, writer_queue: str, workspace: Path, tmp_path: Path
) -> None:
    target = workspace / "out" / "notes.md"
    (workspace / "out").mkdir()
    target.write_text("old\n")
    args = {"target": str(target)}
    plan = plan_doc(file_step(model="writer:agent"))
    result = await run(client, writer_queue, plan, workspace=str(workspace), args=args)
    assert target.read_text() == "landed\n" and result.outputs["write"].startswith("wrote ")

    outside = tmp_path / "outside"
    outside.mkdir()
    paused_plan = plan_doc(
        {"id": "hold", "kind": "pause", "pause": {"state": "HOLD", "resume_arg": "go"}},
        file_step(model="writer:agent", deps=["hold"]),
    )
    handle = await start(client, writer_queue, paused_plan, workspace=str(workspace), args=args)
    await wait_state(handle, "awaiting_input")  # preflight passed; now plant the link
    target.unlink()
    (workspace / "out").rmdir()
    (workspace / "out").symlink_to(outside)
    await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"go": "now"}))
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "artifact-path-escapes-root"
    assert "at dispatch" in cause.message
    assert list(outside.iterdir()) == []  # the agent never ran
