"""Direct unit tests of a plan's ``flows`` shape (workflows.plan.flow_shape): each refusal's
code, path and message, and a valid flow's signature."""

from __future__ import annotations

from typing import Any

from workflows.plan.boundaries import Reservation
from workflows.plan.errors import PlanError
from workflows.plan.flow_shape import parse_flows
from workflows.plan.flows import FlowSignature

A = {"id": "a", "kind": "agent", "prompt": "x"}
BODY = "a flow has a list of 1 to 1000 steps; fix: steps: [...]"


def run(raw: Any) -> tuple[dict[str, FlowSignature], list[tuple[str, str, str]]]:
    errors: list[PlanError] = []
    signatures = parse_flows(raw, errors, contracts={"In": {"n": "number"}}, max_rounds=None)
    return signatures, [(e.code, e.path, e.message) for e in errors]


def test_flows_must_be_a_mapping_of_at_most_100() -> None:
    assert run(None) == ({}, [])
    signatures, errors = run([1])
    assert signatures == {} and [(c, p) for c, p, _ in errors] == [("field.type", "flows")]
    assert errors[0][2] == (
        "flows must map names to flows (got [1]); fix: flows: {NAME: {steps: [...]}}"
    )
    assert run({f"f{i}": {"steps": [A]} for i in range(101)}) == (
        {},
        [("field.range", "flows", "a plan has at most 100 flows (got 101); fix: merge some")],
    )
    assert len(run({f"f{i}": {"steps": [A]} for i in range(100)})[0]) == 100


def test_each_flow_is_named_and_shaped() -> None:
    signatures, errors = run({"Bad Name": {"steps": [A]}, "f": 5, "ok": {"steps": [A]}})
    assert list(signatures) == ["ok"]
    assert errors == [
        (
            "field.pattern",
            "flows['Bad Name']",
            "flow name 'Bad Name' must match ^[a-z][a-z0-9_-]{0,63}$; fix: e.g. review-draft",
        ),
        (
            "document.not_object",
            "flows.f",
            "a flow is a mapping; fix: write {steps: [...], input?: ..., output?: ...}",
        ),
    ]


def test_a_flow_has_one_to_a_thousand_steps() -> None:
    assert run({"f": {"steps": []}}) == (
        {"f": FlowSignature(None)},
        [("field.range", "flows.f.steps", BODY)],
    )
    assert run({"f": {}})[1] == [("field.missing", "flows.f.steps", BODY)]
    assert run({"f": {"steps": "a"}})[1] == [("field.range", "flows.f.steps", BODY)]
    many = [{"id": f"s{i}", "kind": "agent", "prompt": "x"} for i in range(1001)]
    assert run({"f": {"steps": many}})[1] == [("field.range", "flows.f.steps", BODY)]


def test_body_steps_and_header_errors() -> None:
    raw = {
        "f": {
            "steps": [{"id": "p", "kind": "pause"}, {"id": "q", "kind": "zzz"}, A, {"kind": "run"}],
            "input": 5,
            "bogus": 1,
        }
    }
    codes = [(c, p) for c, p, _ in run(raw)[1]]
    assert codes[:4] == [
        ("field.unknown", "flows.f.bogus"),
        ("field.type", "flows.f.input"),
        ("flow.step_kind", "flows.f.steps[0].kind"),
        ("step.kind_unknown", "flows.f.steps[1].kind"),
    ]
    messages = {p: m for _, p, m in run(raw)[1]}
    assert messages["flows.f.steps[0].kind"] == (
        "a pause step cannot run inside a flow; fix: a flow body takes agent, gate and set "
        "steps: put the rest at the top level"
    )
    assert messages["flows.f.steps[3].kind"].startswith("a run step cannot run inside a flow")


def test_a_valid_flow_has_its_signature() -> None:
    signatures, errors = run({"f": {"steps": [A], "input": {"k": "string"}}})
    assert errors == []
    assert signatures == {
        "f": FlowSignature(
            fields={"k": "string"},
            worst=Reservation(invocations=1, wall_ms=900_000),
            worst_step="a",
            size=1,
        )
    }
    named, errors = run({"f": {"steps": [A], "input": "In"}})
    assert errors == [] and named["f"].fields == {"n": "number"}
