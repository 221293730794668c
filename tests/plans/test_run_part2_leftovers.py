"""The rarer combinations of plan features: ``set`` steps in flow bodies,
``ensure`` on ``run`` steps."""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator
from temporalio.client import Client

from activities.config import Settings
from tests.plans.run_helpers import agent, failure, plan_doc, start, status, trace
from workflows.plan.run_types import PlanRunResult
from workflows.plan.schema import shipped_schema
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


def test_the_published_schema_refuses_what_the_validator_refuses_in_pattern_keyed_maps() -> None:
    schema = shipped_schema()
    validator = Draft202012Validator(json.loads(schema))
    good = scored()
    assert not list(validator.iter_errors(good))
    for where, bad in (
        ("set", lambda d: d["flows"]["score"]["steps"][0]["set"].update({"not-a-key": "1"})),
        ("with", lambda d: d["steps"][1]["with"].update({"bad key": "x"})),
        ("contracts", lambda d: d["contracts"].update({"1st": {"n": "integer"}})),
        ("flows", lambda d: d["flows"].update({"Upper": d["flows"]["score"]})),
    ):
        doc = copy.deepcopy(good)
        bad(doc)
        assert list(validator.iter_errors(doc)), where
        assert validate_document(doc).errors, where


def test_ensure_on_a_run_step_validates_like_a_step() -> None:
    doc = scored(ensure=[{"expr": "result.chars > 0"}, {"file_exists": "../out.txt"}])
    codes = [(e.code, e.path) for e in validate_document(doc).errors]
    assert codes == [("path.escapes_root", "steps[1].ensure[1].file_exists")]
    doc = scored(ensure=[{"judged": {"statement": "it is short"}}])
    (error,) = validate_document(doc).errors
    assert error.code == "ensure.form" and "a run step is not a boundary" in error.message
    doc = scored(ensure=[{"expr": "item == 1"}])
    assert [e.code for e in validate_document(doc).errors] == ["expr.unknown_name"]


async def test_ensure_on_a_run_step_checks_the_flows_output_and_is_never_retried(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    held = await start(client, worker_queue, scored(ensure=[{"expr": "result.chars == 13"}]))
    result: PlanRunResult = await held.result()
    assert result.outputs["check"]["chars"] == 13
    checked = [
        r["data"] for r in trace(settings.runs_dir, held.id) if r["type"] == "ensure.checked"
    ]
    assert checked == [
        {"step": "check", "index": 0, "form": "expr", "holds": True, "reason": "true"}
    ]

    error = await failure(client, worker_queue, scored(ensure=[{"expr": "result.long"}]))
    assert error.type == "ensure-failed" and "check: ensure[0] expr failed" in error.message
    assert "never re-run" in error.message

    # routed by the run step's on_fail, as a child's failure is
    routed = scored(ensure=[{"expr": "result.long"}], on_fail="rescue")
    routed["steps"][2] = agent("rescue", "Recover.", "rescued")
    result = await (await start(client, worker_queue, routed)).result()
    assert result.outputs["rescue"] == "rescued" and "check" not in result.outputs
