"""Direct unit tests of sub-flow helpers (workflows.plan.flows) and the consumer-step notes of
``ponder plan validate`` (workflows.plan.run_notes)."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan.flows import (
    MAX_WITH_DEPTH,
    check_with,
    flow_output,
    input_fields,
    invocations,
    output_ref,
    render_with,
    step_ids,
    with_depth_errors,
)
from workflows.plan.model import Flow, FlowHeader, Plan
from workflows.plan.refs import RefError
from workflows.plan.run_notes import consumer_notes


def flow(**fields: Any) -> Flow:
    return Flow.model_validate({"steps": [{"id": "c", "kind": "agent", "prompt": "x"}], **fields})


def plan(steps: list[dict[str, Any]], flows: dict[str, Any] | None = None) -> Plan:
    doc = {"schema": "ponder-plan/1", "name": "p", "steps": steps, "flows": flows or {}}
    return Plan.model_validate(doc)


def test_input_fields() -> None:
    contracts = {"In": {"n": "number"}}
    assert input_fields(None, contracts) is None
    assert input_fields(FlowHeader(), contracts) is None
    assert input_fields(FlowHeader.model_validate({"input": "In"}), contracts) == {"n": "number"}
    assert input_fields(FlowHeader.model_validate({"input": "Ghost"}), contracts) == {}
    inline = FlowHeader.model_validate({"input": {"k": "string"}})
    assert input_fields(inline, contracts) == {"k": "string"}


def test_render_with_passes_whole_references_typed_and_renders_the_rest() -> None:
    inputs = {"n": 3, "who": "ada"}
    outputs = {"a": '{"x": [1, 2]}', "b": "plain"}
    got = render_with(
        {
            "whole": "${input.n}",
            "text": "hi ${input.who}, ${steps.b.output}",
            "list": ["${input.n}", "${steps.b.output}!"],
            "map": {"k": "${input.who}", "z": 5},
            "n": 7,
        },
        inputs=inputs,
        outputs=outputs,
        fields=None,
        contracts={},
    )
    assert got == {
        "whole": 3,
        "text": "hi ada, plain",
        "list": [3, "plain!"],
        "map": {"k": "ada", "z": 5},
        "n": 7,
    }


def test_render_with_reads_text_as_json_for_typed_fields() -> None:
    outputs = {"a": '```json\n{"x": [1, 2]}\n```', "t": "not json"}
    fields = {"rec": "R", "s": "string", "anything": "any", "names": "string[]"}
    contracts = {"R": {"x": "number[]"}}
    got = render_with(
        {
            "rec": "${steps.a.output}",
            "s": "${steps.a.output}",
            "anything": "${steps.t.output}",
            "names": '["a"]',
            "free": "${steps.t.output}",
        },
        inputs={},
        outputs=outputs,
        fields=fields,
        contracts=contracts,
    )
    assert got["rec"] == {"x": [1, 2]}
    assert got["s"] == outputs["a"]  # a string field keeps the text
    assert got["anything"] == "not json"
    assert got["names"] == ["a"]  # a list of strings is JSON too
    assert got["free"] == "not json"  # no field declared for it
    with pytest.raises(RefError) as caught:
        render_with(
            {"rec": "${steps.t.output}"},
            inputs={},
            outputs=outputs,
            fields=fields,
            contracts=contracts,
        )
    assert str(caught.value).startswith(
        "with.rec: the flow's input declares R and the value is text that is not JSON ("
    )


def test_render_with_refuses_values_nested_too_deep() -> None:
    deep: Any = "x"
    for _ in range(MAX_WITH_DEPTH + 1):
        deep = [deep]
    with pytest.raises(RefError, match=f"nested deeper than {MAX_WITH_DEPTH}"):
        render_with({"d": deep}, inputs={}, outputs={}, fields=None, contracts={})
    assert render_with({"d": deep[0]}, inputs={}, outputs={}, fields=None, contracts={})


def test_with_depth_errors_count_every_branch() -> None:
    def nest(n: int, leaf: Any = 1) -> Any:
        value = leaf
        for _ in range(n):
            value = [value]
        return value

    at = nest(MAX_WITH_DEPTH)
    # the deep item first: a shallow list after it is walked first and must not drop it
    over_in_list = [nest(MAX_WITH_DEPTH), [1]]
    over_in_map = {"a": nest(MAX_WITH_DEPTH), "b": [1]}
    p = plan(
        [
            {
                "id": "r",
                "kind": "run",
                "flow": "f",
                "with": {"ok": at, "bad": over_in_list, "mix": [nest(MAX_WITH_DEPTH), {"k": 1}]},
            },
            {"id": "s", "kind": "agent", "prompt": "x"},
            {"id": "t", "kind": "run", "flow": "f", "with": {"m": over_in_map, "w": [[1], 2]}},
        ],
        {"f": {"steps": [{"id": "c", "kind": "agent", "prompt": "x"}]}},
    )
    errors = with_depth_errors(p.steps)
    assert [(e.code, e.path) for e in errors] == [
        ("flow.with_too_deep", "steps[0].with.bad"),
        ("flow.with_too_deep", "steps[0].with.mix"),
        ("flow.with_too_deep", "steps[2].with.m"),
    ]
    assert errors[0].message == (
        f"with.bad is nested more than {MAX_WITH_DEPTH} lists or mappings deep; fix: flatten "
        "it, or pass it as one ${...} reference"
    )


def test_check_with() -> None:
    assert check_with({"a": 1}, None, {}) is None
    assert check_with({"z": 1, "b": 2, "n": 3}, {"n": "number"}, {}) == (
        "with.b: the flow's input contract has no field 'b'"
    )
    assert check_with({"n": 3}, {"n": "number"}, {}) is None
    assert check_with({"n": "x"}, {"n": "number"}, {}) is not None


def test_output_ref_and_flow_output() -> None:
    assert output_ref(flow()) is None
    declared = flow(output="${steps.c.output.x}")
    ref = output_ref(declared)
    assert ref is not None and ref.name == "c"
    assert flow_output(declared, inputs={}, outputs={"c": {"x": 4}}) == 4
    with pytest.raises(RefError):
        flow_output(declared, inputs={}, outputs={})
    by_input = flow(output="${input.k}")
    assert flow_output(by_input, inputs={"k": "v"}, outputs={}) == "v"
    two = Flow.model_validate(
        {
            "steps": [
                {"id": "a", "kind": "agent", "prompt": "x"},
                {"id": "b", "kind": "agent", "prompt": "x"},
            ]
        }
    )
    assert flow_output(two, inputs={}, outputs={"a": 1, "b": 2}) == 2
    assert flow_output(two, inputs={}, outputs={"a": 1}) == 1
    with pytest.raises(RefError, match=r"^the body settled no step, so it has no output$"):
        flow_output(two, inputs={}, outputs={})


def test_invocations_and_step_ids_scope_flow_children() -> None:
    p = plan(
        [
            {"id": "a", "kind": "agent", "prompt": "x"},
            {"id": "h", "kind": "gate", "gate": {}},
            {"id": "m", "kind": "gate", "prompt": "x"},
            {"id": "r", "kind": "run", "flow": "f"},
            {"id": "ghost", "kind": "run", "flow": "nowhere"},
            {"id": "s", "kind": "set", "set": {"k": "1"}},
        ],
        {
            "f": {
                "steps": [
                    {"id": "c", "kind": "agent", "prompt": "x"},
                    {"id": "hg", "kind": "gate", "gate": {}},
                    {"id": "mg", "kind": "gate", "prompt": "x"},
                    {"id": "v", "kind": "set", "set": {"k": "1"}},
                ]
            }
        },
    )
    assert [sid for sid, _ in invocations(p)] == ["a", "m", "r/c", "r/mg"]
    assert [step.id for _, step in invocations(p)] == ["a", "m", "c", "mg"]
    assert step_ids(p) == ["a", "h", "m", "r", "r/c", "r/hg", "r/mg", "r/v", "ghost", "s"]


# -- run notes --------------------------------------------------------------------------------

TRANSPORT = (
    "a failure its consumer reports (class transport) is not retried: retry.on is {on} and "
    "max_attempts {n}; to retry it, list transport in retry.on, with max_attempts 2 or more and "
    "idempotent: true"
)
TIMEOUT = (
    "with no step_done within 900000 ms (15 min, the default stage timeout) its token is void "
    "and the attempt fails class timeout, where the reference waits without limit; set "
    "timeout_ms to choose"
)


def consumer(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "x", "dispatch": "consumer", **fields}


def test_consumer_notes() -> None:
    retry = {"max_attempts": 2, "on": ["transport"]}
    p = plan(
        [
            consumer("a"),
            consumer("b", retry=retry, idempotent=True),
            consumer("c", retry=retry, idempotent=True, timeout_ms=1000),
            consumer("d", retry={"max_attempts": 1, "on": ["transport"]}, timeout_ms=1000),
            consumer("e", retry={"max_attempts": 3, "on": ["malformed-output"]}, timeout_ms=5),
            {"id": "f", "kind": "agent", "prompt": "x"},
            {"id": "r", "kind": "run", "flow": "fl"},
        ],
        {
            "fl": {
                "steps": [
                    consumer("k", timeout_ms=1000),
                    {"id": "z", "kind": "agent", "prompt": "x"},
                ]
            }
        },
    )
    assert consumer_notes(p) == [
        "consumer-defaults: step a (dispatch: consumer): "
        + TRANSPORT.format(on="[]", n=1)
        + "; "
        + TIMEOUT,
        "consumer-defaults: step b (dispatch: consumer): " + TIMEOUT,
        "consumer-defaults: step d (dispatch: consumer): "
        + TRANSPORT.format(on="['transport']", n=1),
        "consumer-defaults: step e (dispatch: consumer): "
        + TRANSPORT.format(on="['malformed-output']", n=3),
        "consumer-defaults: flow fl step k (dispatch: consumer): " + TRANSPORT.format(on="[]", n=1),
    ]
