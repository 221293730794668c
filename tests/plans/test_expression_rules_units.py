"""Direct unit tests of the expression rules (workflows.plan.expression_rules): the names each
site binds, its CEL sites, the plan-wide ceiling, and the exact messages validation gives."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan.expression_rules import bound_names, expression_budget_error, step_expressions
from workflows.plan.model import AgentStep, RunStep, SetStep
from workflows.plan.validate import validate_document


def agent(sid: str = "a", **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "x", **fields}


def test_bound_names() -> None:
    plain = AgentStep.model_validate(agent())
    assert bound_names(plain, member=False, result=False) == {"input", "steps"}
    assert bound_names(plain, member=False, result=True) == {"input", "steps", "result"}
    assert bound_names(plain, member=True, result=False) == {
        "input",
        "steps",
        "item",
        "item_index",
    }
    looping = AgentStep.model_validate(agent(iterate={"max": 2, "until": "true"}))
    assert bound_names(looping, member=False, result=False) == {"input", "steps", "iteration"}
    run = RunStep.model_validate({"id": "r", "kind": "run", "flow": "f"})
    assert bound_names(run, member=False, result=True) == {"input", "steps", "result"}


def test_step_expressions() -> None:
    set_step = SetStep.model_validate(
        {"id": "s", "kind": "set", "set": {"k": "1", "j": "2"}, "ensure": [{"expr": "3"}]}
    )
    assert list(step_expressions(set_step)) == [
        ("1", ("set", "k"), False),
        ("2", ("set", "j"), False),
        ("3", ("ensure", 0, "expr"), True),
    ]
    looping = AgentStep.model_validate(
        agent(ensure=[{"file_exists": "f"}, {"expr": "e"}], iterate={"max": 2, "until": "u"})
    )
    assert list(step_expressions(looping)) == [
        ("e", ("ensure", 1, "expr"), True),
        ("u", ("iterate", "until"), True),
    ]
    assert list(step_expressions(object())) == []


def test_the_plan_wide_ceiling_counts_every_site_in_every_body() -> None:
    text = "1 == 1" + " " * 300
    doc: dict[str, Any] = {"steps": [], "flows": {}}
    assert expression_budget_error(doc) is None
    sites = [
        agent("a", ensure=[{"expr": text + "a"}], when=text + "w"),
        agent("b", iterate={"max": 2, "until": text + "u"}),
        {"id": "s", "kind": "set", "set": {"k": text + "s"}},
        "junk",
    ]
    body = [agent("c", ensure=[{"expr": text + f"{n}"} for n in range(48)])]
    doc = {"steps": sites, "flows": {"f": {"steps": body}, "g": 5}}
    error = expression_budget_error(doc)
    assert error is not None
    chars = 52 * len(text) + 4 + 10 + 38 * 2
    assert (error.code, error.path, error.message) == (
        "expr.too_complex",
        "steps",
        f"the plan has 52 distinct expressions of {chars} characters, over 1000 expressions or "
        "16000 characters; fix: reuse expressions or split the plan",
    )
    doc["flows"] = {}
    assert expression_budget_error(doc) is None  # four sites left


def errors(steps: list[Any]) -> list[tuple[str, str, str]]:
    result = validate_document({"schema": "ponder-plan/1", "name": "p", "steps": steps})
    return [(e.code, e.path, e.message) for e in result.errors]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (
            [agent(ensure=[{"expr": "foo > 1 && bar"}])],
            [
                (
                    "expr.unknown_name",
                    "steps[0].ensure[0].expr",
                    "bar, foo are not bound here (this expression may read input, result, "
                    "steps); fix: use one of those names",
                )
            ],
        ),
        (
            [agent(when="result == 1")],
            [
                (
                    "expr.unknown_name",
                    "steps[0].when",
                    "result is not bound here (this expression may read input, steps); fix: use "
                    "one of those names",
                )
            ],
        ),
        (
            [agent(iterate={"max": 2, "until": "iteration > item"})],
            [
                (
                    "expr.unknown_name",
                    "steps[0].iterate.until",
                    "item is not bound here (this expression may read input, iteration, result, "
                    "steps); fix: use one of those names",
                )
            ],
        ),
        (
            [agent(ensure=[{"expr": 'steps["b"] == 1'}]), agent("b")],
            [
                (
                    "ref.not_earlier",
                    "steps[0].ensure[0].expr",
                    "steps[\"b\"]: 'b' is steps[1], which has not run when this step runs; fix: "
                    "reference an earlier step",
                )
            ],
        ),
        (
            [
                {
                    "id": "s",
                    "kind": "set",
                    "set": {"k": "1"},
                    "ensure": [{"judged": {"statement": "s"}}],
                }
            ],
            [
                (
                    "ensure.form",
                    "steps[0].ensure[0]",
                    "a set step takes expr, file_exists and file_contains predicates: judged is "
                    "a model call, and a set step dispatches nothing; fix: judge in an agent step",
                )
            ],
        ),
        (
            [
                {"id": "f", "kind": "fanout", "fanout": {"over": [1], "chain": ["m"]}},
                agent("m", when="true"),
            ],
            [
                (
                    "when.chain_member",
                    "steps[1].when",
                    "a fan-out's chain member runs for every item its fan-out activates; fix: "
                    "move when to the fan-out, or test the item in an ensure",
                )
            ],
        ),
        (
            [
                agent(
                    ensure=[
                        {"file_exists": "../${input.x}"},
                        {"file_contains": {"path": "/abs", "text": "t"}},
                    ]
                )
            ],
            [
                (
                    "path.escapes_root",
                    "steps[0].ensure[0].file_exists",
                    "'../${input.x}' is a path with a \"..\" segment; fix: give a path relative "
                    "to the workspace",
                ),
                (
                    "path.escapes_root",
                    "steps[0].ensure[1].file_contains.path",
                    "'/abs' is an absolute path; fix: give a path relative to the workspace",
                ),
            ],
        ),
        ([agent(ensure=[{"file_exists": "out/${input.x}.md"}])], []),
        (
            [
                {"id": "f", "kind": "fanout", "fanout": {"over": [1], "chain": ["m"]}},
                agent("m", ensure=[{"expr": "item_index >= 0 && item != null"}]),
            ],
            [],
        ),
    ],
)
def test_validation_messages(steps: list[Any], expected: list[tuple[str, str, str]]) -> None:
    assert errors(steps) == expected


def test_a_run_steps_judged_predicate_is_refused() -> None:
    doc = {
        "schema": "ponder-plan/1",
        "name": "p",
        "steps": [
            {"id": "r", "kind": "run", "flow": "f", "ensure": [{"judged": {"statement": "s"}}]}
        ],
        "flows": {"f": {"steps": [agent("c")]}},
    }
    found = [(e.code, e.path, e.message) for e in validate_document(doc).errors]
    assert found == [
        (
            "ensure.form",
            "steps[0].ensure[0]",
            "a run step takes expr, file_exists and file_contains predicates: judged is a model "
            "call, and a run step is not a boundary (nothing reserves its call); fix: judge in "
            "the flow's last step",
        )
    ]
