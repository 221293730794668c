"""The run directory is written at every human wait, the trace and call rows as appends: what a
wait sends (and history keeps) is what is new, not the whole trace again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from activities.config import Settings
from activities.plan.files import WRITE_PLAN_FILES
from tests.plans.run_helpers import agent, events, plan_doc, start, status, trace
from workflows.names import UPDATE_RESUME
from workflows.plan.run_types import ResumeInput

WAITS = 6


def waiting_plan(waits: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    for i in range(waits):
        deps = [f"s{i - 1}"] if i else []
        steps.append(agent(f"s{i}", f"Step {i}: " + "words " * 40, deps=deps))
        steps.append(
            {"id": f"p{i}", "kind": "pause", "deps": [f"s{i}"],
             "pause": {"state": "AWAITING_OK", "resume_arg": f"ok{i}"}}
        )  # fmt: skip
    return plan_doc(*steps)


async def writes(handle: WorkflowHandle) -> list[dict[str, Any]]:
    """The input of every run-directory write in the run's history."""
    out = []
    async for event in handle.fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == WRITE_PLAN_FILES:
                out.append(json.loads(attrs.input.payloads[0].data))
    return out


def shipped(write: dict[str, Any], name: str) -> str:
    whole = write["files"].get(name)
    return whole if whole is not None else write["appends"][name]["text"]


async def at_pause(handle: WorkflowHandle, i: int, trace_file: Path) -> None:
    """Until the run waits at pause ``i`` and has written its run directory for that wait."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        now = await status(handle)
        pending = now.pending_pause
        here = now.state == "awaiting_input" and pending is not None and pending.step == f"p{i}"
        if here and trace_file.exists() and f'"p{i}"' in trace_file.read_text():
            return
        assert loop.time() < deadline, f"not waiting at p{i}: {now.state}"
        await asyncio.sleep(0.05)


async def resume_all(
    handle: WorkflowHandle, waits: int, trace_file: Path, between: Any = None
) -> None:
    for i in range(waits):
        await at_pause(handle, i, trace_file)
        if between is not None:
            between(i)
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={f"ok{i}": "yes"}))
    await handle.result()


async def test_each_wait_sends_only_the_new_trace_lines(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, waiting_plan(WAITS))
    await resume_all(handle, WAITS, settings.runs_dir / handle.id / "trace.jsonl")
    sent = await writes(handle)
    assert len(sent) == WAITS + 1  # one at each wait, one at the end
    assert "trace.jsonl" in sent[0]["files"]
    assert all("trace.jsonl" not in w["files"] for w in sent[1:])
    on_disk = (settings.runs_dir / handle.id / "trace.jsonl").read_text()
    # Every line travelled once: the shipped text adds up to the trace, nothing twice.
    assert "".join(shipped(w, "trace.jsonl") for w in sent) == on_disk
    assert (
        "".join(shipped(w, "calls.jsonl") for w in sent)
        == (settings.runs_dir / handle.id / "calls.jsonl").read_text()
    )
    rows = trace(settings.runs_dir, handle.id)
    assert [r["seq"] for r in rows] == [e.seq for e in await events(handle)]


async def test_a_run_directory_that_lost_its_trace_is_sent_it_whole(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, waiting_plan(2))
    path = settings.runs_dir / handle.id / "trace.jsonl"

    def lose(i: int) -> None:
        if i == 0:
            path.unlink()  # deleted while the run waits (or another worker's disk)

    await resume_all(handle, 2, path, lose)
    rows = trace(settings.runs_dir, handle.id)
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[0]["type"] == "run.opened" and rows[-1]["type"] == "run.closed"
    sent = await writes(handle)
    whole = [i for i, w in enumerate(sent) if "trace.jsonl" in w["files"]]
    assert whole == [0, 2]  # the first write, then the gap (write 1) answered by the whole trace
