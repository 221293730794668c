"""Part 2 as the spec says where the first builds stopped short: ``set`` steps in flow bodies,
``ensure`` on ``run`` steps."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.plans.run_helpers import agent, failure, plan_doc, start, status, trace
from workflows.plan.run_types import PlanRunResult
from workflows.plan.validate import validate_document


def scored(**run_fields: Any) -> dict[str, Any]:
    """A flow whose body computes values (a set child) that its agent child and the caller use."""
    return plan_doc(
        agent("draft", "Draft.", "one two three"),
        {"id": "check", "kind": "run", "flow": "score", "deps": ["draft"],
         "with": {"draft": "${steps.draft.output}"}, **run_fields},
        agent("after", "Chars: ${steps.check.output.chars}", deps=["check"]),
        flows={
            "score": {
                "input": {"draft": "string"},
                "steps": [
                    {"id": "measure", "kind": "set",
                     "set": {"chars": "size(input.draft)", "long": "size(input.draft) > 20"}},
                    agent("note", "It has ${steps.measure.output.chars} characters.",
                          '{"n": 4}', deps=["measure"], out="N"),
                    # reads its sibling by its contract (parsed), not a top-level step's
                    {"id": "tally", "kind": "set", "deps": ["note"],
                     "set": {"n": 'steps["note"].n + 1'}},
                ],
                "output": "${steps.measure.output}",
            }
        },
        contracts={"N": {"n": "integer"}},
    )  # fmt: skip


def test_a_flow_body_takes_set_steps() -> None:
    result = validate_document(scored())
    assert result.plan is not None and not result.errors, result.errors
    bad = scored()
    bad["flows"]["score"]["steps"][0]["set"] = {"chars": 'steps["draft"].x'}  # not in scope
    codes = {e.code for e in validate_document(bad).errors}
    assert codes & {"ref.unknown_step", "ref.not_earlier"}, codes


async def test_a_set_child_computes_values_in_its_flow(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    handle = await start(client, worker_queue, scored())
    result: PlanRunResult = await handle.result()
    assert result.outputs["check"] == {"chars": 13, "long": False}
    assert result.outputs["check/measure"] == {"chars": 13, "long": False}
    assert result.outputs["after"].startswith("Simulated answer to: Chars: 13")
    done = await status(handle)
    assert done.steps["check/measure"] == "settled" and done.steps["check/note"] == "settled"
    assert result.outputs["check/tally"] == {"n": 5}
    rows = trace(settings.runs_dir, handle.id)
    evaluated = [r["data"] for r in rows if r["type"] == "set.evaluated"]
    assert evaluated == [
        {"step": "check/measure", "ok": True, "keys": ["chars", "long"]},
        {"step": "check/tally", "ok": True, "keys": ["n"]},
    ]
    assert result.calls == 3  # draft, check/note, after: the set child dispatches nothing

    failing = scored()
    failing["flows"]["score"]["steps"][0]["set"]["chars"] = "input.missing"
    error = await failure(client, worker_queue, failing)
    assert error.type == "expr-failed" and "check/measure" in error.message
