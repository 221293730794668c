"""More refusals of the stratum mapping (workflows.plan.stratum), each at the path its author
wrote, with the messages a mapping writes itself; and the helpers beside the mapping."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plans.test_stratum_flows import S, codes, do, flow
from workflows.plan.stratum import fanned_inputs, fanout_notes, map_stratum

FAN = {
    "over": "${input.name}",
    "concurrency": 1,
    "isolation": "none",
    "require": "all",
    "merge": "sequential",
    "steps": [{"do": "x"}],
}


def sub_flow(**output: Any) -> dict[str, Any]:
    doc = flow({"id": "r", "run": "sub", "with": {"name": "${input.name}"}})
    doc["flows"]["main"]["output"] = {"from": "${r.output}", "contract": "R"}
    doc["flows"]["sub"] = {
        "input": {"name": "string"},
        "output": {"from": "${b.output}", "contract": "R"} | output,
        "steps": [do("b", "hello ${input.name}")],
    }
    return doc


CASES: list[tuple[Any, tuple[str, str]]] = [
    (lambda d: S(d)[0].update(id="BAD ID"), ("field.pattern", "flows.main.steps[0].id")),
    (lambda d: S(d)[0].update(do=5), ("field.type", "flows.main.steps[0].do")),
    (
        lambda d: S(d)[0].update(budget={"dispatches": 0}),
        ("field.range", "flows.main.steps[0].budget.dispatches"),
    ),
    (
        lambda d: S(d)[0].update(when="result.x == 1"),
        ("ref.unknown_step", "flows.main.steps[0].when"),
    ),
    (
        lambda d: S(d).insert(0, {"id": "s", "set": {"v": "1"}, "out": "Nope"}),
        ("contract.unknown", "flows.main.steps[0].out"),
    ),
    (
        lambda d: S(d).insert(0, {"id": "f", "fanout": {**FAN, "pre_merge": "x"}}),
        ("stratum.unsupported", "flows.main.steps[0].fanout.pre_merge"),
    ),
    (
        lambda d: S(d).insert(0, {"id": "f", "fanout": {**FAN, "merge": "parallel"}}),
        ("field.choice", "flows.main.steps[0].fanout.merge"),
    ),
    (
        lambda d: S(d).insert(
            0, {"id": "f", "fanout": {k: v for k, v in FAN.items() if k != "steps"}}
        ),
        ("field.missing", "flows.main.steps[0].fanout.steps"),
    ),
    (
        lambda d: S(d).insert(0, {"id": "f", "fanout": {**FAN, "steps": [5]}}),
        ("document.not_object", "flows.main.steps[0].fanout.steps[0]"),
    ),
    (
        lambda d: d["flows"]["main"]["output"].update(contract="Nope"),
        ("contract.unknown", "flows.main.output.contract"),
    ),
    (
        lambda d: d["flows"]["main"]["output"].update({"from": "${a.output} ${a.output}"}),
        ("stratum.reference", "flows.main.output.from"),
    ),
    (
        lambda d: d["flows"]["main"]["output"].update({"from": "${nope"}),
        ("stratum.reference", "flows.main.output.from"),
    ),
    (
        lambda d: d["contracts"]["R"].update(value="string?"),
        ("stratum.unsupported", "contracts.R.value"),
    ),
    (
        lambda d: d["flows"]["main"].update(budget={"dispatches": 0}),
        ("field.range", "flows.main.budget.dispatches"),
    ),
]


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_refusals_land_at_the_authors_path(change: Any, expected: tuple[str, str]) -> None:
    doc = flow(do("a", "hi"))
    change(doc)
    assert expected in codes(doc)


def test_a_sub_flows_output_reference_is_refused_at_its_from() -> None:
    assert codes(sub_flow()) == []
    assert ("stratum.reference", "flows.sub.output.from") in codes(sub_flow(**{"from": "${x"}))


def test_messages_the_mapping_writes() -> None:
    doc = flow(do("a", "hi", budget={"dollars": 1}))
    errors = {(e.code, e.path): e.message for e in map_stratum(doc).errors}
    assert errors[("field.unknown", "flows.main.steps[0].budget.dollars")] == (
        "budget takes usd, tokens, dispatches, ms; fix: remove 'dollars'"
    )
    doc = flow(do("a", "hi"))
    doc["flows"]["main"]["output"]["from"] = "${a.output} and ${a.output}"
    errors = {(e.code, e.path): e.message for e in map_stratum(doc).errors}
    assert errors[("stratum.reference", "flows.main.output.from")] == (
        "a flow's output is one ${<step>.output[.path]}; fix: name one step's output"
    )
    doc = flow(do("a", "hi"))
    doc["flows"]["main"]["output"]["contract"] = "Nope"
    errors = {(e.code, e.path): e.message for e in map_stratum(doc).errors}
    assert errors[("contract.unknown", "flows.main.output.contract")] == (
        "output contract 'Nope' names no contract; fix: declare it under contracts"
    )


def test_the_entry_budget_and_a_sub_flows_budget_are_mapped() -> None:
    doc = flow(do("a", "hi"), budget={"dispatches": 9, "ms": 5000, "usd": 1.5, "tokens": 7})
    assert map_stratum(doc).doc["budget"] == {
        "calls": 9,
        "wall_ms": 5000,
        "usd": 1.5,
        "tokens": 7,
    }
    nested = sub_flow()
    nested["flows"]["sub"]["budget"] = {"dispatches": 4}
    mapped = map_stratum(nested)
    assert mapped.errors == []
    assert mapped.doc["steps"][0]["budget"] == {"calls": 4}
    assert mapped.doc["steps"][0]["out"] == "R"
    assert mapped.paths["steps[0].out"] == "flows.sub.output.contract"
    assert mapped.paths["steps[0].flow"] == "flows.main.steps[0].run"


def test_the_entry_output_step_reads_the_named_step() -> None:
    mapped = map_stratum(flow(do("a", "hi"), do("b", "there")))
    final = mapped.doc["steps"][-1]
    assert final == {
        "id": "main:output",
        "kind": "set",
        "deps": ["b"],
        "set": {"value": 'steps["b"].value'},
        "out": "R",
    }


def test_fanout_stage_expressions_count_toward_the_plan_wide_ceiling() -> None:
    many = [
        {"expr": f"len(result.value) > {n} && ((((((((1))))))))" + " " * 400} for n in range(60)
    ]
    doc = flow(do("a", "hi"))
    S(doc).insert(0, {"id": "f", "fanout": {**FAN, "steps": [{"do": "x", "ensure": many}]}})
    assert codes(doc) == [("expr.too_complex", "flows")]


def test_fanned_inputs_and_notes() -> None:
    plan = {
        "steps": [
            {"id": "f", "kind": "fanout", "fanout": {"over": "${input.items}"}},
            {"id": "g", "kind": "fanout", "fanout": {"over": "${input.items}"}},
            {"id": "h", "kind": "fanout", "fanout": {"over": [1, 2]}},
            {"id": "i", "kind": "fanout", "fanout": {"over": "${steps.a.output}"}},
            "junk",
        ]
    }
    assert fanned_inputs(plan) == ["items"]
    assert fanned_inputs({}) == []
    assert fanout_notes(plan) == [
        f"fanout-items-capped: fan-out {sid} runs at most the first 100 items of {over} "
        "(ponder bounds a run's history); ponder plan run refuses a longer --arg list"
        for sid, over in [
            ("f", "${input.items}"),
            ("g", "${input.items}"),
            ("i", "${steps.a.output}"),
        ]
    ]


def test_the_entry_output_step_takes_an_id_no_step_has() -> None:
    mapped = map_stratum(flow(do("main:output", "hi"), do("b", "x")))
    assert [s["id"] for s in mapped.doc["steps"]] == ["main:output", "b", "main:output_"]


def test_a_run_step_inside_a_sub_flow_is_mapped_then_refused() -> None:
    doc = sub_flow()
    doc["flows"]["sub"]["steps"].append({"id": "rr", "run": "sub"})
    assert codes(doc) == [("flow.step_kind", "flows.sub.steps[1].kind")]


def test_an_unknown_top_level_key_is_named_as_written() -> None:
    doc = flow(do("a", "hi"))
    doc["bad key"] = 1
    assert ("field.unknown", "['bad key']") in codes(doc)
