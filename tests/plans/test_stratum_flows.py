"""Stratum flow documents (``version: 1``) validated, translated and run as they are.

Unit tests hold the translation to plans written by hand and every refusal to its code and the
author's path; the end-to-end tests run this repository's own stratum-format examples on the
simulated provider through ``ponder plan run`` (and ``ponder gate``), through the real
``temporal workflow start``, and through the Python client, all served by one ``ponder worker``
process.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client, WorkflowFailureError

from activities.config import load_settings
from client.connect import connect
from client.session import wait_for_worker
from tests.cli import cli_env, ponder, ponder_here, start_ponder
from tests.hostile.harness import dumps, temporal
from workflows.names import PLAN_RUN
from workflows.plan.errors import CODES, PlanInvalid
from workflows.plan.run_types import PlanRunInput, PlanRunResult
from workflows.plan.stratum import run_args
from workflows.plan.stratum_expr import ExprError, ExprSite, translate_expression
from workflows.plan.validate import load_plan, validate_document, validate_text

ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / "examples" / "flows"
ALL = ["timeout", "transport", "malformed-output", "policy-refusal", "ensure-failed"]


def flow(*steps: dict[str, Any], **main: Any) -> dict[str, Any]:
    """A stratum document whose entry flow ``main`` has ``steps`` (output: the last step's)."""
    last = steps[-1]["id"]
    body = {"input": {"name": "string"}, "output": {"from": f"${{{last}.output}}", "contract": "R"}}
    extra = main.pop("flows", {})
    return {
        "version": 1,
        "contracts": main.pop("contracts", {"R": {"value": "string"}}),
        "flows": {"entry": "main", "main": body | main | {"steps": list(steps)}, **extra},
    }


def do(step_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "do": text, "out": "R"} | fields


def agent(step_id: str, prompt: str, **fields: Any) -> dict[str, Any]:
    """The agent step a ``do`` step becomes, field order aside."""
    return {
        "id": step_id,
        "kind": "agent",
        "prompt": prompt,
        "deps": [],
        "out": "R",
        "retry": {"max_attempts": 2, "on": ALL},
        "idempotent": True,
        "ensure": [],
    } | fields


def codes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in validate_document(doc).errors]


# --- translation ---------------------------------------------------------------------------


def test_a_linear_flow_with_a_gate_translates_to_the_plan_written_by_hand() -> None:
    doc = flow(
        do("a", "hi ${input.name}", agent="codex", attempts=3,
           ensure=[{"expr": "len(result.value) > 2 && file_exists('notes.md')"}]),
        {"id": "g", "after": ["a"],
         "gate": {"on_approve": None, "on_revise": "a", "on_kill": None}},
        do("b", "use ${a.output.value}", after=["g"], ensure=[{"judged": {
            "statement": "it is short", "stakes": "cheap"}}]),
        max_rounds=1,
    )  # fmt: skip
    result = validate_document(doc)
    assert result.ok, result.errors
    assert result.form == "stratum/v1"
    assert result.translated == {
        "schema": "ponder-plan/1",
        "contracts": {"R": {"value": "string"}},
        "name": "main",
        "max_rounds": 1,
        "x-stratum": {
            "entry": "main",
            "input": {"name": "string"},
            "output": {"from": "${b.output}", "contract": "R"},
        },
        "steps": [
            agent("a", "hi ${input.name}", family="codex",
                  retry={"max_attempts": 3, "on": ALL},
                  ensure=[{"file_exists": "notes.md"}, {"expr": "size(result.value) > 2"}]),
            {"id": "g", "kind": "gate", "deps": ["a"],
             "gate": {"on_approve": None, "on_revise": "a", "on_kill": None}},
            agent("b", "use ${steps.a.output.value}", deps=["g", "a"], ensure=[
                {"judged": {"statement": "it is short", "stakes": "cheap", "model": "judge"}}]),
            {"id": "main:output", "kind": "set", "deps": ["b"],
             "set": {"value": 'steps["b"].value'}, "out": "R"},
        ],
    }  # fmt: skip
    plan = result.plan
    assert plan is not None and plan.max_rounds == 1


def test_fanout_stages_become_a_chain_and_a_sub_flow_a_flow() -> None:
    doc = flow(
        {"id": "fan", "fanout": {
            "over": "${input.items}", "concurrency": 3, "isolation": "none", "require": 1,
            "merge": "sequential", "steps": [
                {"do": "write ${item} for ${input.name}"},
                {"do": "polish ${prev}", "out": "R", "attempts": 4,
                 "ensure": [{"expr": "result.value != prev.value && 'x' in result.value"}]}]}},
        {"id": "sub", "after": ["fan"], "run": "child", "with": {"text": "${fan.output[0].value}"}},
        flows={"child": {"input": {"text": "string"}, "budget": {"dispatches": 4, "ms": 4_000_000},
                         "output": {"from": "${c.output}", "contract": "R"},
                         "steps": [do("c", "say ${input.text}")]}},
    )  # fmt: skip
    doc["flows"]["main"]["input"] = {"name": "string", "items": "string[]"}
    result = validate_document(doc)
    assert result.ok, result.errors
    steps = result.translated["steps"]  # type: ignore[index]
    assert steps[0] == {
        "id": "fan", "kind": "fanout", "deps": [],
        "fanout": {"over": "${input.items}", "chain": ["fan.stage0", "fan.stage1"],
                   "max_fanout": 100, "concurrency": 3, "join": "quorum:1", "isolation": "none"},
    }  # fmt: skip
    stage0 = {k: v for k, v in agent("fan.stage0", "write [item] for ${input.name}").items()}
    del stage0["out"]  # the stage declares none
    assert steps[1] == stage0
    assert steps[2] == agent(
        "fan.stage1",
        "polish ${steps.fan.stage0.output}",
        retry={"max_attempts": 4, "on": ALL},
        ensure=[{"expr": '(result.value != steps["fan.stage0"].value) && '
                         '(type(result.value) == string ? (result.value).contains("x") : '
                         '("x") in (result.value))'}],
    )  # fmt: skip
    assert steps[3] == {
        "id": "sub", "kind": "run", "flow": "child", "deps": ["fan"],
        "with": {"text": "${steps.fan.output.0.value}"},
        "budget": {"calls": 4, "wall_ms": 4_000_000}, "out": "R",
    }  # fmt: skip
    assert result.translated["flows"] == {  # type: ignore[index]
        "child": {
            "steps": [agent("c", "say ${input.text}")],
            "input": {"text": "string"},
            "output": "${steps.c.output}",
        }
    }
    assert steps[4]["set"] == {"value": 'steps["sub"].value'}


@pytest.mark.parametrize(
    ("stratum", "cel"),
    [
        ("result.value != ''", 'result.value != ""'),
        ("len(result.items) >= 2 || !result.ok", "(size(result.items) >= 2) || !(result.ok)"),
        ("input.limit / 2 > 1.5", "(double(input.limit) / double(2)) > 1.5"),
        ("matches(result.id, '^[a-z]+$')", 'matches(result.id, "^[a-z]+$")'),
        ("result.return == -1", 'result["return"] == -(1)'),
        ('result.list[0].name == "x\\ty"', 'result.list[0].name == "x\\ty"'),
        ("null == result.gone", "null == result.gone"),
    ],
)
def test_expressions_translate_to_cel(stratum: str, cel: str) -> None:
    assert translate_expression(stratum, ExprSite()).cel == cel


@pytest.mark.parametrize(
    ("stratum", "site", "why"),
    [
        ("any(result.flags)", ExprSite(), "any() has no exact CEL translation"),
        ("str(result.n) == '1'", ExprSite(), "str() has no exact CEL translation"),
        ("steps.a == 1", ExprSite(), "unknown identifier 'steps'"),
        ("item == 'a'", ExprSite(), "item is bound only in a fan-out stage"),
        ("prev.value == 'a'", ExprSite(item=True), "prev is bound only in a fan-out stage after"),
        ("file_exists('a') || result.ok", ExprSite(), "file_exists() is translated only as"),
        ("result.a ? 1 : 2", ExprSite(), "unexpected character '?'"),
        ("result.__proto__", ExprSite(), "member '__proto__' is forbidden"),
        ("result", ExprSite(result="steps"), "result (the completed steps) is read only"),
        ("(" * 80 + "1" + ")" * 80, ExprSite(), "nests deeper than 64"),
    ],
)
def test_untranslatable_expressions_are_refused(stratum: str, site: ExprSite, why: str) -> None:
    with pytest.raises(ExprError, match=why.replace("(", r"\(").replace(")", r"\)")):
        translate_expression(stratum, site)


# --- refusals --------------------------------------------------------------------------------


REFUSALS: list[tuple[Any, tuple[str, str]]] = [
    (lambda d: d.update(version=2), ("stratum.version", "version")),
    (lambda d: d["flows"].update(entry="nope"), ("stratum.entry", "flows.entry")),
    (lambda d: d.update(extra=1), ("field.unknown", "extra")),
    (lambda d: S(d)[0].update(when="any(result.x)"),
     ("stratum.expression", "flows.main.steps[0].when")),
    (lambda d: S(d)[0].update(set={"a": "1"}),
     ("stratum.construct", "flows.main.steps[0]")),
    (lambda d: S(d)[0].update(ensure=[{"expr": "any(result.x)"}]),
     ("stratum.expression", "flows.main.steps[0].ensure[0].expr")),
    (lambda d: S(d)[0].update(do="hi ${nope}"),
     ("stratum.reference", "flows.main.steps[0].do")),
    (lambda d: S(d)[0].update(do="hi ${item}"),
     ("stratum.reference", "flows.main.steps[0].do")),
    (lambda d: d["contracts"]["R"].update(kind="a|b"),
     ("stratum.unsupported", "contracts.R.kind")),
    (lambda d: S(d)[0].update(out="Nope"), ("contract.unknown", "flows.main.steps[0].out")),
    (lambda d: S(d)[0].update(agent="BAD FAMILY"),
     ("field.pattern", "flows.main.steps[0].agent")),
    (lambda d: S(d)[0].update(attempts=0), ("field.range", "flows.main.steps[0].attempts")),
    (lambda d: S(d).insert(0, {"id": "e", "evaluate": {"command": "x", "timeout_ms": 1}}),
     ("stratum.unsupported", "flows.main.steps[0].evaluate")),
    (lambda d: S(d).insert(0, {"id": "f", "fanout": {
        "over": "${input.name}", "concurrency": 1, "isolation": "none", "require": "all",
        "merge": "sequential", "dispatch": "consumer", "steps": [{"do": "x"}]}}),
     ("stratum.unsupported", "flows.main.steps[0].fanout.dispatch")),
    (lambda d: S(d).insert(0, {"id": "f", "fanout": {
        "over": "${input.name}", "concurrency": 1, "isolation": "none", "require": "all",
        "merge": "sequential", "steps": [{"do": "${prev}"}]}}),
     ("stratum.reference", "flows.main.steps[0].fanout.steps[0].do")),
]  # fmt: skip


@pytest.mark.parametrize(("change", "expected"), REFUSALS)
def test_what_cannot_be_translated_is_refused_with_a_code_at_the_authors_path(
    change: Any, expected: tuple[str, str]
) -> None:
    doc = flow(do("a", "hi"))
    change(doc)
    assert expected in codes(doc)


def S(doc: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = doc["flows"]["main"]["steps"]
    return steps


def test_every_stratum_code_has_a_case() -> None:
    stratum = {c for c in CODES if c.startswith("stratum.")}
    assert stratum == {code for _, (code, _) in REFUSALS if code.startswith("stratum.")}


def test_the_plan_wide_expression_ceiling_holds_before_any_is_translated() -> None:
    many = [{"expr": f"len(result.value) > {n} && ((((((((1))))))))" + " " * 400}
            for n in range(60)]  # fmt: skip
    doc = flow(do("a", "hi", ensure=many))
    assert codes(doc) == [("expr.too_complex", "flows")]


def test_a_gate_inside_a_sub_flow_is_a_human_gate_in_its_body() -> None:
    doc = flow(
        {"id": "s", "run": "child", "with": {}},
        flows={"child": {"input": {}, "output": {"from": "${c.output}", "contract": "R"},
                         "steps": [do("c", "x"), {"id": "g", "after": ["c"], "gate": {
                             "on_approve": None, "on_revise": None, "on_kill": None}}]}},
    )  # fmt: skip
    result = validate_document(doc)
    assert result.errors == [], result.errors
    body = result.translated["flows"]["child"]["steps"]  # type: ignore[index]
    assert (body[1]["kind"], body[1]["deps"]) == ("gate", ["c"])


def test_load_plan_and_the_text_forms_accept_the_format() -> None:
    text = (FLOWS / "fact-colors.v1.yaml").read_text()
    plan = load_plan(text, filename="fact-colors.v1.yaml")
    assert [s.id for s in plan.steps] == [
        "fact",
        "review",
        "colors",
        "colors.stage0",
        "main:output",
    ]
    as_json = json.dumps(yaml.safe_load(text))
    assert validate_text(as_json, filename="f.json").ok
    with pytest.raises(PlanInvalid) as info:
        load_plan(text.replace("len(result.value)", "max(result.value)", 1))
    assert [e.code for e in info.value.errors] == ["stratum.expression"]


def test_run_args_are_declared_and_typed_by_the_entry_input() -> None:
    plan = {"x-stratum": {"input": {"name": "string", "items": "string[]", "n": "integer?"}}}
    assert run_args(plan, {"name": "[1]", "items": '["a", "b"]'}) == {
        "name": "[1]",
        "items": ["a", "b"],
    }
    for args, why in [
        ({"name": "x"}, "the flow's input items is required"),
        ({"name": "x", "items": "a, b"}, r"declared string\[\], so its value is JSON text"),
        ({"name": "x", "items": "[]", "n": "NaN"}, r"declared integer\?"),
        ({"name": "x", "items": "[]", "other": "1"}, "the flow declares no input 'other'"),
    ]:
        with pytest.raises(ValueError, match=why):
            run_args(plan, args)
    assert run_args({"schema": "ponder-plan/1"}, {"k": "[1]"}) == {"k": "[1]"}
    fanned = plan | {"steps": [{"id": "f", "fanout": {"over": "${input.items}"}}]}
    assert run_args(fanned, {"name": "x", "items": json.dumps(list(range(100)))})
    with pytest.raises(ValueError, match="101 items, and a fan-out over it runs at most 100"):
        run_args(fanned, {"name": "x", "items": json.dumps(list(range(101)))})


def test_validate_shows_the_translation(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "home")
    shown = ponder_here("plan", "validate", str(FLOWS / "brief-subflow.v1.yaml"), "--translated",
                        env=env)  # fmt: skip
    assert shown.code == 0, shown.err
    text = shown.out[: shown.out.rindex("}") + 1]
    translated = json.loads(text)
    assert translated["schema"] == "ponder-plan/1"
    assert "valid stratum/v1 plan 'main'" in shown.out
    assert (
        "note: fanout-items-capped: fan-out sections runs at most the first 100 items of "
        "${input.parts}" in shown.err
    )
    bad = tmp_path / "bad.v1.yaml"
    bad.write_text((FLOWS / "brief-subflow.v1.yaml").read_text().replace("len(", "min(", 1))
    refused = ponder_here("plan", "validate", str(bad), "--format", "json", env=env)
    assert refused.code == 2
    out = json.loads(refused.out)
    assert out["form"] == "stratum/v1" and out["translated"]["name"] == "main"
    assert [(e["code"], e["path"]) for e in out["errors"]] == [
        ("stratum.expression", "flows.main.steps[2].set.words")
    ]


# --- end to end ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def worker_env(
    tmp_path_factory: pytest.TempPathFactory, server_address: str
) -> AsyncIterator[dict[str, str]]:
    """One ``ponder worker`` process serves the CLI, ``temporal`` and the Python client."""
    home = tmp_path_factory.mktemp("stratum-home")
    queue = f"stratum-{uuid.uuid4().hex[:8]}"
    environment = cli_env(home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE=queue)
    worker = await start_ponder("worker", env=environment)
    try:
        await wait_for_worker(await Client.connect(server_address), queue, 60)
        yield environment
    finally:
        worker.terminate()
        await worker.wait()


async def test_ponder_plan_run_pauses_at_the_gate_and_finishes_with_the_flow_output(
    worker_env: dict[str, str],
) -> None:
    env = dict(worker_env)
    run_id = f"stratum-{uuid.uuid4().hex[:6]}"
    refused = await ponder(
        "plan", "run", str(FLOWS / "fact-colors.v1.yaml"), "--run-id", run_id,
        "--executor", "codex=sim:default", "--arg", "topic=the moon", env=env,
    )  # fmt: skip
    assert refused.code == 2, refused.err  # refused before the run opens
    assert "the flow's input items is required; fix: --arg items=VALUE" in refused.err
    paused = await ponder(
        "plan", "run", str(FLOWS / "fact-colors.v1.yaml"), "--run-id", run_id,
        "--executor", "codex=sim:default", "--executor", "judge=sim:default",
        "--arg", "topic=the moon", "--arg", 'items=["banana", "fir tree"]', env=env,
    )  # fmt: skip
    assert paused.code == 75, paused.err
    assert f"continue with: ponder gate approve {run_id} review" in paused.err
    done = await ponder("gate", "approve", run_id, "review", env=env)
    assert done.code == 0, done.err
    assert json.loads(done.out) == {"value": "green"}  # the flow's output: colors[1]
    # one fact, one judge, one call per item; the output step dispatches nothing
    assert f"run {run_id} completed: 4 calls (simulated)" in done.err


async def test_temporal_workflow_start_and_the_python_client_run_a_stratum_document(
    worker_env: dict[str, str], server_address: str
) -> None:
    queue = worker_env["PONDER_TASK_QUEUE"]
    doc = yaml.safe_load((FLOWS / "brief-subflow.v1.yaml").read_text())
    run_input = {
        "plan": doc,
        "args": {"name": "ponder", "parts": ["install", "plans"]},  # typed, as JSON allows
        "executors": {"claude": "sim:default"},
        "default_family": "claude",
    }
    run_id = f"stratum-t-{uuid.uuid4().hex[:6]}"
    code, output = await temporal(
        "workflow", "start", "--address", server_address, "--namespace", "default",
        "--task-queue", queue, "--type", PLAN_RUN, "--workflow-id", run_id,
        "--input", dumps(run_input),
    )  # fmt: skip
    assert code == 0, output
    client = await connect(load_settings(home=worker_env["PONDER_HOME"]), server_address)
    result: PlanRunResult = await client.get_workflow_handle(
        run_id, result_type=PlanRunResult
    ).result()
    assert result.outputs["main:output"] == {"value": "the brief"}
    assert json.loads(str(result.outputs["draft"])) == {"value": "checked"}  # the sub-flow's output
    assert result.outputs["size"] == {"words": 7}  # len of "checked"
    # outline 1, draft/first 1, draft/check 2 (its ensure failed once), 2 items x 2 stages, final 1
    assert result.calls == 9
    # The Python client: the same document, a stage failing its ensure on every attempt.
    failing = yaml.safe_load((FLOWS / "brief-subflow.v1.yaml").read_text())
    stage = failing["flows"]["main"]["steps"][3]["fanout"]["steps"][1]
    stage["x-sim"] = {"outputs": ['{"value": "a section"}']}  # == prev: the ensure fails
    handle = await client.start_workflow(
        PLAN_RUN,
        PlanRunInput.model_validate(run_input | {"plan": failing}),
        id=f"stratum-p-{uuid.uuid4().hex[:6]}",
        task_queue=queue,
        result_type=PlanRunResult,
    )
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    cause = info.value.cause
    assert getattr(cause, "type", None) == "join-unsatisfied", cause
    assert "ensure" in str(cause)
