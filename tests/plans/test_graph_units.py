"""Direct unit tests of the step graph's dep rules (workflows.plan.graph) and of a few rules
around it: cycles reported on the forward edge, forward deps, unparsed steps on the way, flow
bodies' ids and file predicate references, each with its exact message."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan.validate import validate_document


def agent(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "x", **fields}


def errors(steps: list[Any], **fields: Any) -> list[tuple[str, str, str]]:
    doc = {"schema": "ponder-plan/1", "name": "p", "steps": steps, **fields}
    return [(e.code, e.path, e.message) for e in validate_document(doc).errors]


def cycle(dep: str, sid: str, at: str) -> tuple[str, str, str]:
    return (
        "deps.cycle",
        at,
        f"dep {dep!r} closes a cycle back to {sid!r}; fix: deps point to earlier steps only",
    )


def later(dep: str, j: int, at: str) -> tuple[str, str, str]:
    return (
        "deps.not_earlier",
        at,
        f"dep {dep!r} is steps[{j}], after this step; fix: move it above or drop the dep "
        "(plans run in order)",
    )


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([agent("a", deps=["a"])], [cycle("a", "a", "steps[0].deps[0]")]),
        (
            [agent("a", deps=["b"]), agent("b", deps=["a"])],
            [cycle("b", "a", "steps[0].deps[0]")],
        ),
        (
            [agent("a", deps=["b"]), agent("b", deps=["c"]), agent("c", deps=["a"])],
            [cycle("b", "a", "steps[0].deps[0]"), cycle("c", "b", "steps[1].deps[0]")],
        ),
        (
            [agent("a", deps=["b"]), agent("b", deps=["c"]), agent("c")],
            [later("b", 1, "steps[0].deps[0]"), later("c", 2, "steps[1].deps[0]")],
        ),
        (
            [agent("a", deps=["b"]), {"id": "b"}],
            [
                later("b", 1, "steps[0].deps[0]"),
                (
                    "field.missing",
                    "steps[1].kind",
                    "kind is required; fix: one of agent, gate, fanout, pause, tournament, run, "
                    "set",
                ),
            ],
        ),
        (
            [agent("a", deps=["ghost", "b", "b"]), agent("b")],
            [
                (
                    "deps.unknown",
                    "steps[0].deps[0]",
                    "dep 'ghost' names no step; fix: use one of the ids above this step",
                ),
                later("b", 1, "steps[0].deps[1]"),
                (
                    "deps.duplicate",
                    "steps[0].deps[2]",
                    "dep 'b' is listed twice; fix: list it once",
                ),
            ],
        ),
    ],
)
def test_dep_rules(steps: list[Any], expected: list[tuple[str, str, str]]) -> None:
    assert errors(steps) == expected


def test_a_body_step_refused_for_its_kind_still_holds_its_id() -> None:
    found = errors(
        [{"id": "r", "kind": "run", "flow": "f"}],
        flows={"f": {"steps": [{"id": "p", "kind": "pause"}, agent("p")]}},
    )
    assert [(c, p) for c, p, _ in found] == [
        ("flow.step_kind", "flows.f.steps[0].kind"),
        ("step.id_duplicate", "flows.f.steps[1].id"),
    ]
    assert found[1][2] == "id 'p' is already used by steps[0]; fix: give each step its own id"


def test_file_predicate_references_are_checked_at_their_path() -> None:
    contains = {"file_contains": {"path": "${steps.ghost.output}", "text": "t"}}
    assert errors([agent("a", ensure=[{"file_exists": "ok.md"}, contains])]) == [
        (
            "ref.unknown_step",
            "steps[0].ensure[1].file_contains.path",
            "${steps.ghost.output}: 'ghost' names no step; fix: use an earlier step's id",
        )
    ]


def test_a_step_outside_a_chain_depends_on_its_fan_out_not_a_member() -> None:
    fan = {"id": "f", "kind": "fanout", "fanout": {"over": [1], "chain": ["m"]}}
    assert errors([fan, agent("m"), agent("z", deps=["m"])]) == [
        (
            "fanout.member_referenced",
            "steps[2].deps[0]",
            "'m' runs once per item inside fan-out 'f'; fix: depend on 'f' (its joined output) "
            "instead",
        )
    ]
