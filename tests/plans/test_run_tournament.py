"""A plan's tournament step runs a child Tournament; its calls count against the plan's budget."""

from __future__ import annotations

import json

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from client.read_tokens import read_token
from tests.plans.run_helpers import agent, events, plan_doc, start, status
from tests.tournament.test_report import parse
from workflows.call_options import CallOptions
from workflows.plan.boundaries import tournament_calls
from workflows.plan.model import TournamentStep
from workflows.plan.run_types import PlanRunResult
from workflows.wire_replay import WireReplay

TOURNAMENT_STEP = {
    "id": "best",
    "kind": "tournament",
    "deps": ["topic"],
    "prompt": "Write a haiku about ${steps.topic.output}.",
    "model": "sim:default",
    "tournament": {"profile": "quick", "seed": 3},
}


async def test_a_tournament_step_is_a_child_workflow_billed_to_the_plan(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    plan = plan_doc(
        agent("topic", "Pick a topic.", "rivers"),
        TOURNAMENT_STEP,
        agent("polish", "Polish: ${steps.best.output}", deps=["best"]),
    )
    handle = await start(client, worker_queue, plan)
    result: PlanRunResult = await handle.result()
    assert "[sim q=" in result.outputs["best"]  # the winner of the child tournament
    assert result.outputs["polish"].startswith("Simulated answer to: Polish: Simulated")
    final = await status(handle)
    assert final.budget is not None
    reserved = tournament_calls(TournamentStep.model_validate(TOURNAMENT_STEP))
    child_calls = final.budget.calls_spent - 2  # topic and polish
    assert 15 <= child_calls <= reserved  # quick: 15 nominal calls, within the reservation
    settled = [e for e in await events(handle) if e.type == "settled" and e.data["step"] == "best"]
    assert settled[0].data["calls"] == child_calls
    child = client.get_workflow_handle(settled[0].data["child_run"])
    assert (await child.describe()).workflow_type == "Tournament"
    # The child's calls are counted everywhere the plan's are: the result (the CLI's
    # "completed: N calls"), cost.json and the report (its fact, the step's row and node).
    assert (result.calls, result.invocations) == (final.budget.calls_spent, 3)
    run_dir = settings.runs_dir / handle.id
    cost = json.loads((run_dir / "cost.json").read_text())
    assert (cost["calls"], cost["invocations"]) == (result.calls, 3)
    root = parse((run_dir / "report.html").read_text()).root
    assert root.one("dd", id="calls").text() == str(result.calls)
    (row,) = root.find_all("tr", cls="step-row", data_step="best")
    calls = row.one("td", cls="calls")
    assert calls.text().startswith(f"{child_calls} (1 invocation) ")
    link = calls.one("a", cls="child-report")
    assert link.attrs["href"] == f"../{child.id}/report.html"
    assert (run_dir / str(link.attrs["href"])).resolve().is_file()  # the child's own report


async def test_a_failing_tournament_fails_its_step(client: Client, worker_queue: str) -> None:
    step = dict(
        TOURNAMENT_STEP, deps=[], prompt="x", tournament={"profile": "quick", "max_calls": 5}
    )
    handle = await start(client, worker_queue, plan_doc(step))
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "dispatch-dead"
    assert "budget.planned_calls_exceeded" in cause.message


async def test_a_plan_with_a_tournament_step_replays_from_its_recording(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    """The child tournament's calls live in its own run directory (``<plan>.<step>.<n>``):
    a replay of the plan finds them there, so every call of the replay comes from the record."""
    plan = plan_doc(
        agent("topic", "Pick a topic.", "rivers"),
        TOURNAMENT_STEP,
        agent("polish", "Polish: ${steps.best.output}", deps=["best"]),
    )
    recorded: PlanRunResult = await (await start(client, worker_queue, plan)).result()
    token = read_token(settings.runs_dir, recorded.run_id) or ""  # as the client sends it
    replay = CallOptions(
        replay=WireReplay(run_id=recorded.run_id), read_tokens={recorded.run_id: token}
    )
    handle = await start(client, worker_queue, plan, calls=replay)
    again: PlanRunResult = await handle.result()
    assert again.outputs == recorded.outputs
    settled = [e for e in await events(handle) if e.type == "settled" and e.data["step"] == "best"]
    child_events = settings.runs_dir / settled[0].data["child_run"] / "raw-events.jsonl"
    lines = [json.loads(line) for line in child_events.read_text().splitlines()]
    assert len(lines) >= 15 and all("replayed_from" in e for e in lines)
