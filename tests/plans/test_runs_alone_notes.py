"""The note ``ponder plan validate`` gives a step that runs alone in a concurrent plan
(``run_notes.runs_alone_notes``), directly (pure, milliseconds), then through the CLI (text
and ``--format json``) and MCP's ``plan_validate``.

A step that runs alone (``activation.overlaps``) is noted only when the plan's ``concurrency``
is above 1 and some step of its scope neither waits for it nor is waited for by it, and may
run in the same run (not only across a gate's kill route or a step's ``on_fail``): in a chain
running alone changes nothing, and the note stays quiet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from tests.cli import cli_env, ponder_here
from workflows.plan.model import Plan
from workflows.plan.run_notes import runs_alone_notes
from workflows.plan.validate import load_plan, validate_document

ROOT = Path(__file__).resolve().parents[2]

FANOUT_NOTE = "runs-alone: " + (
    "fan-out 'fan' runs alone: concurrency does not overlap a fan-out with other steps (its "
    "worst case is known only once its items resolve)"
)


def _who(note: str) -> str:
    """The step a runs-alone note names, with its kind."""
    return note.removeprefix("runs-alone: ").split(" runs alone")[0]


def _agent(step_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": step_id, "kind": "agent", "prompt": f"Do {step_id}."} | fields


def _fanout(step_id: str, over: Any = ("x", "y"), **fields: Any) -> list[dict[str, Any]]:
    """The fan-out step and its one chain member (``<id>_item``)."""
    member = _agent(f"{step_id}_item", prompt=fields.pop("member_prompt", "Do the item."))
    spec = {"over": list(over) if isinstance(over, tuple) else over, "chain": [member["id"]]}
    if isinstance(over, str):
        spec["max_fanout"] = 3
    return [{"id": step_id, "kind": "fanout", "fanout": spec} | fields, member]


def _plan(*steps: dict[str, Any], concurrency: int | None = 2, **top: Any) -> Plan:
    doc: dict[str, Any] = {"schema": "ponder-plan/1", "name": "n", "steps": list(steps)}
    if concurrency is not None:
        doc["concurrency"] = concurrency
    return load_plan(doc | top)


HUMAN_GATE = {"id": "g", "kind": "gate", "deps": ["a"], "gate": {"on_kill": None}}
PAUSE = {"id": "p", "kind": "pause", "pause": {"state": "WAIT", "resume_arg": "v"}}
CONSUMER = _agent("c", dispatch="consumer", timeout_ms=1000)
CONSUMER_FLOW = {"steps": [_agent("inner", dispatch="consumer", timeout_ms=1000)]}
ENGINE_FLOW = {"steps": [_agent("inner")]}


def test_a_fan_out_beside_an_independent_step_is_noted() -> None:
    plan = _plan(_agent("a"), *_fanout("fan"), _agent("last", deps=["a", "fan"]))
    assert runs_alone_notes(plan) == [FANOUT_NOTE]


@pytest.mark.parametrize("concurrency", [None, 1])
def test_no_note_without_concurrency(concurrency: int | None) -> None:
    plan = _plan(_agent("a"), *_fanout("fan"), concurrency=concurrency)
    assert runs_alone_notes(plan) == []


@pytest.mark.parametrize(
    ("steps", "flows", "note"),
    [
        (
            [_agent("a"), HUMAN_GATE, _agent("b")],
            {},
            "human gate 'g' runs alone: concurrency does not overlap a human gate with other "
            "steps (a revise walks the run again from its target)",
        ),
        (
            [_agent("a"), PAUSE],
            {},
            "pause 'p' runs alone: concurrency does not overlap a pause with other steps (the "
            "run holds there until it is resumed)",
        ),
        (
            [_agent("a"), CONSUMER],
            {},
            "consumer step 'c' runs alone: concurrency does not overlap a consumer step with "
            "other steps (the run counts a consumer's wait as agent time, apart from a "
            "person's)",
        ),
        (
            [_agent("a"), {"id": "r", "kind": "run", "flow": "f"}],
            {"f": CONSUMER_FLOW},
            "run step 'r' runs alone: concurrency does not overlap a run step whose flow 'f' "
            "has a consumer step with other steps (the run counts a consumer's wait as agent "
            "time, apart from a person's)",
        ),
        (
            [_agent("a"), _agent("k", checkpoint="here")],
            {},
            "agent step 'k' runs alone: concurrency does not overlap a step with a checkpoint "
            "(here) with other steps (a revert restores the run to that one point of its walk)",
        ),
        (
            [_agent("a"), {"id": "r", "kind": "run", "flow": "f", "checkpoint": "here"}],
            {"f": ENGINE_FLOW},
            "run step 'r' runs alone: concurrency does not overlap a step with a checkpoint "
            "(here) with other steps (a revert restores the run to that one point of its walk)",
        ),
    ],
)
def test_each_kind_that_runs_alone_says_why(
    steps: list[dict[str, Any]], flows: dict[str, Any], note: str
) -> None:
    assert runs_alone_notes(_plan(*steps, flows=flows)) == [f"runs-alone: {note}"]


def test_a_model_gate_with_a_checkpoint_is_named_a_model_gate() -> None:
    gate = {"id": "m", "kind": "gate", "prompt": "Judge ${steps.a.output}.", "checkpoint": "c1"}
    (note,) = runs_alone_notes(_plan(_agent("a"), _agent("b"), gate))
    assert note.startswith("runs-alone: model gate 'm' runs alone: ")


def test_a_tournament_step_with_a_checkpoint_is_named_a_tournament_step() -> None:
    tournament = {"id": "t", "kind": "tournament", "prompt": "Pick.", "checkpoint": "c1"}
    (note,) = runs_alone_notes(_plan(_agent("a"), tournament))
    assert note.startswith("runs-alone: tournament step 't' runs alone: ")


def test_steps_that_overlap_are_never_noted() -> None:
    plan = _plan(
        _agent("a"),
        _agent("b"),
        {"id": "s", "kind": "set", "set": {"v": "1"}},
        {"id": "m", "kind": "gate", "prompt": "Judge ${steps.a.output}."},
        {"id": "r", "kind": "run", "flow": "f"},
        flows={"f": ENGINE_FLOW},
    )
    assert runs_alone_notes(plan) == []


def test_a_chain_through_deps_is_quiet_even_transitively() -> None:
    # g reaches a only through b: without the transitive closure a and g look independent.
    plan = _plan(
        _agent("a"),
        _agent("b", deps=["a"]),
        HUMAN_GATE | {"deps": ["b"]},
        PAUSE | {"deps": ["g"]},
        _agent("z", deps=["p"]),
    )
    assert runs_alone_notes(plan) == []


def test_a_prompt_reference_orders_steps_as_a_dep_does() -> None:
    plan = _plan(_agent("a"), CONSUMER | {"prompt": "Build ${steps.a.output}."})
    assert runs_alone_notes(plan) == []


def test_what_a_fan_out_reads_through_its_items_or_its_chain_orders_it() -> None:
    over = _plan(_agent("a"), *_fanout("fan", over="${steps.a.output}"))
    assert runs_alone_notes(over) == []
    chain = _plan(_agent("a"), *_fanout("fan", member_prompt="Do it after ${steps.a.output}."))
    assert runs_alone_notes(chain) == []
    reader = _plan(*_fanout("fan"), _agent("b", prompt="Read ${steps.fan.output}."))
    assert runs_alone_notes(reader) == []
    # An input that shares a step's name is not that step.
    named = _plan(_agent("a"), *_fanout("fan", over="${input.a}"))
    assert runs_alone_notes(named) == [FANOUT_NOTE]


def test_a_route_to_a_step_orders_it_after_the_router() -> None:
    # x has no deps, but only the gate's approve route runs it.
    routed = HUMAN_GATE | {"gate": {"on_approve": "x", "on_kill": None}}
    assert runs_alone_notes(_plan(_agent("a"), routed, _agent("x"))) == []


def test_a_gates_kill_branch_never_runs_beside_what_follows_the_gate() -> None:
    # On kill only stop runs; on approve stop is skipped: fan and stop are never both run.
    routed = HUMAN_GATE | {"gate": {"on_approve": "fan", "on_kill": "stop"}}
    steps = [_agent("a"), routed, _agent("stop"), *_fanout("fan"), _agent("z", deps=["fan"])]
    assert runs_alone_notes(_plan(*steps)) == []
    # A step reached by neither branch could run beside the gate and the fan-out.
    notes = runs_alone_notes(_plan(*steps, _agent("free")))
    assert [_who(n) for n in notes] == [
        "human gate 'g'",
        "fan-out 'fan'",
    ]


def test_a_fan_out_on_the_kill_branch_is_quiet_too() -> None:
    routed = HUMAN_GATE | {"gate": {"on_approve": "x", "on_kill": "fan"}}
    steps = [_agent("a"), routed, _agent("x"), *_fanout("fan"), _agent("z", deps=["x"])]
    assert runs_alone_notes(_plan(*steps)) == []


def test_a_kill_route_back_to_an_earlier_step_is_a_jump_not_a_branch() -> None:
    # a ran before the gate whatever it decides: fan may still run beside it.
    back = HUMAN_GATE | {"deps": ["b"], "gate": {"on_kill": "a"}}
    plan = _plan(_agent("a"), _agent("b"), back, *_fanout("fan", deps=["g"]))
    assert [_who(n) for n in runs_alone_notes(plan)] == [
        "human gate 'g'",
        "fan-out 'fan'",
    ]


def test_an_on_fail_branch_never_runs_beside_what_depends_on_the_failing_step() -> None:
    steps = [_agent("a", on_fail="rescue"), *_fanout("fan", deps=["a"]), _agent("rescue")]
    assert runs_alone_notes(_plan(*steps)) == []
    gate = {"id": "g", "kind": "gate", "gate": {"on_kill": None}}
    notes = runs_alone_notes(_plan(*steps, gate))  # g waits for nothing and nothing for it
    assert [_who(n) for n in notes] == [
        "fan-out 'fan'",
        "human gate 'g'",
    ]


def test_a_model_gates_redo_orders_the_steps_reading_its_target() -> None:
    # c reads nothing of a or m, yet m may redo a, and c reads a: c waits for m, which waits
    # for a (the steps before m that read a wait for m too).
    gate = {"id": "m", "kind": "gate", "prompt": "Judge.", "fail_route": "a", "max_redos": 1}
    plan = _plan(_agent("a"), gate, CONSUMER | {"prompt": "Use ${steps.a.output}."})
    assert runs_alone_notes(plan) == []


def test_only_the_steps_with_an_independent_sibling_are_noted() -> None:
    plan = _plan(
        _agent("a"),
        *_fanout("fan"),
        HUMAN_GATE | {"deps": ["a", "fan"]},  # after both: ordered with everything
        _agent("last", deps=["g"]),
    )
    assert runs_alone_notes(plan) == [FANOUT_NOTE]


def test_a_called_flows_body_is_noted_in_its_own_scope() -> None:
    body = {"steps": [_agent("one"), {"id": "ok", "kind": "gate", "gate": {"on_kill": None}}]}
    chained = {"steps": [_agent("one"), {"id": "ok", "kind": "gate", "deps": ["one"], "gate": {}}]}
    plan = _plan(
        {"id": "r", "kind": "run", "flow": "f"},
        _agent("b", deps=["r"]),
        flows={"f": body, "chained": chained, "unused": body},
    )
    (note,) = runs_alone_notes(plan)
    assert note.startswith("runs-alone: human gate 'ok' in flow 'f' runs alone: ")
    called = _plan(
        {"id": "r", "kind": "run", "flow": "chained"},
        _agent("b", deps=["r"]),
        flows={"chained": chained},
    )
    assert runs_alone_notes(called) == []


def _stratum(*steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": 1,
        "contracts": {"Result": {"value": "string"}},
        "flows": {
            "entry": "main",
            "main": {
                "input": {"items": "string[]"},
                "output": {"from": "${last.output}", "contract": "Result"},
                "steps": [*steps, {"id": "last", "after": ["fan"], "do": "Last.", "out": "Result"}],
            },
        },
    }


STRATUM_FANOUT = {
    "id": "fan",
    "fanout": {"over": "${input.items}", "steps": [{"do": "Do ${item}.", "out": "Result"}]},
}


def test_a_stratum_fanout_beside_an_independent_step_is_noted_at_validation() -> None:
    result = validate_document(_stratum({"id": "a", "do": "A.", "out": "Result"}, STRATUM_FANOUT))
    assert result.ok, result.errors
    assert result.translated is not None and result.translated["concurrency"] == 2
    assert FANOUT_NOTE in result.notes


def test_a_stratum_chain_gets_no_note() -> None:
    after = STRATUM_FANOUT | {"after": ["a"]}
    result = validate_document(_stratum({"id": "a", "do": "A.", "out": "Result"}, after))
    assert result.ok and result.plan is not None, result.errors
    assert runs_alone_notes(result.plan) == []
    fact_colors = yaml.safe_load((ROOT / "examples/flows/fact-colors.v1.yaml").read_text())
    result = validate_document(fact_colors)
    assert result.ok and not any("runs alone" in n for n in result.notes)


def test_plan_validate_prints_the_note_in_text_and_json(tmp_path: Path) -> None:
    file = tmp_path / "flow.v1.yaml"
    file.write_text(
        yaml.safe_dump(_stratum({"id": "a", "do": "A.", "out": "Result"}, STRATUM_FANOUT))
    )
    text = ponder_here("plan", "validate", str(file), env=cli_env(tmp_path))
    assert text.code == 0, text.err
    assert f"{file}: note: {FANOUT_NOTE}" in text.err.splitlines()
    shown = ponder_here("plan", "validate", "--format", "json", str(file), env=cli_env(tmp_path))
    assert shown.code == 0, shown.err
    assert FANOUT_NOTE in json.loads(shown.out)["notes"]


async def test_mcp_plan_validate_gives_the_same_note() -> None:
    from client.mcp.args import PlanValidateArgs
    from client.mcp.tools import plan_validate

    document = yaml.safe_dump(_stratum({"id": "a", "do": "A.", "out": "Result"}, STRATUM_FANOUT))
    args = PlanValidateArgs(document=document, filename="flow.v1.yaml")
    out = await plan_validate(cast(Any, None), args, cast(Any, None))  # it uses neither
    assert out["valid"] and FANOUT_NOTE in out["notes"]
