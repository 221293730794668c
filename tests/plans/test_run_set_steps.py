"""Set steps end to end (docs/plans.md, "Expressions, ensure, iterate and set"): values over input
and steps, a later prompt reads them, a failing key ends the run ``expr-failed``, and replay
evaluates nothing."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.worker import Replayer

from activities.config import Settings
from client.connect import data_converter
from tests.plans.run_helpers import agent, events, failure, plan_doc, run, start, trace
from workflows.plan_run.workflow import PlanRunWorkflow

SET_PLAN = plan_doc(
    agent("count", "How many?", '{"n": 4}', out="N"),
    {
        "id": "cfg",
        "kind": "set",
        "deps": ["count"],
        "set": {
            "limit": 'steps["count"].n * input.scale',
            "label": "'batch-' + string(input.scale)",
            "big": 'steps["count"].n > 3',
        },
        "ensure": [{"expr": "result.limit > 0"}],
    },
    agent("use", "Use ${steps.cfg.output.limit} as ${steps.cfg.output.label}.", deps=["cfg"]),
    contracts={"N": {"n": "integer"}},
)


async def test_a_set_value_reaches_a_later_prompt(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    result = await run(client, worker_queue, SET_PLAN, args={"scale": 3})
    assert result.outputs["cfg"] == {"limit": 12, "label": "batch-3", "big": True}
    assert result.outputs["use"].startswith("Simulated answer to: Use 12 as batch-3.")
    assert result.calls == 2  # the set step dispatched nothing
    rows = trace(settings.runs_dir, result.run_id)
    evaluated = [r for r in rows if r["type"] == "set.evaluated"]
    assert evaluated and evaluated[0]["data"]["keys"] == ["limit", "label", "big"]
    checked = [r["data"] for r in rows if r["type"] == "ensure.checked"]
    assert checked == [{"step": "cfg", "index": 0, "form": "expr", "holds": True, "reason": "true"}]
    settled = {r["data"]["step"]: r["seq"] for r in rows if r["type"] == "settled"}
    use = next(r for r in rows if r["type"] == "dispatched" and r["data"]["step"] == "use")
    assert use["caused_by"] == [settled["cfg"]]


async def test_a_missing_key_fails_expr_failed(client: Client, worker_queue: str) -> None:
    plan = plan_doc(
        {"id": "cfg", "kind": "set", "set": {"a": "1", "b": "input.missing + 1"}},
        agent("after", "never", deps=["cfg"]),
    )
    error = await failure(client, worker_queue, plan, args={"present": 1})
    assert error.type == "expr-failed"
    assert "set.b" in error.message and "missing" in error.message


async def test_replay_evaluates_nothing(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, SET_PLAN, args={"scale": 2})
    await handle.result()
    history = await handle.fetch_history()
    seen = [e for e in await events(handle) if e.type == "set.evaluated"]
    assert len(seen) == 1
    # The Replayer has no activities, local or not: the recorded marker is the only answer.
    replayer = Replayer(workflows=[PlanRunWorkflow], data_converter=data_converter(settings))
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None
