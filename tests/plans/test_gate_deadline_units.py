"""Direct unit tests of human-gate deadlines (workflows.plan.deadlines) and of small model rules
(workflows.plan.model): each refusal's exact message, the timers' schedule, notifiers, vendor
keys, ``when`` dumping and a human gate's attempts."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from workflows.plan.deadlines import GateSchedule, deadline_problems, notifiers_named, schedule
from workflows.plan.model import AgentStep, EnsureExpr, GateStep, HumanGate, Plan

SPAN = "1000 ms (1 s) to 7776000000 ms (90 days)"


def gate(**fields: Any) -> HumanGate:
    return HumanGate.model_validate(fields)


@pytest.mark.parametrize(
    ("fields", "problems"),
    [
        ({}, []),
        ({"deadline": 1000, "default": "approve"}, []),
        ({"deadline": 7_776_000_000, "default": "kill"}, []),
        (
            {"deadline": 999, "default": "kill"},
            [(("deadline",), f"deadline=999 is outside {SPAN}; fix: give ms in range")],
        ),
        (
            {"deadline": 7_776_000_001, "default": "kill"},
            [(("deadline",), f"deadline=7776000001 is outside {SPAN}; fix: give ms in range")],
        ),
        (
            {"deadline": 5000, "default": "revise"},
            [
                (
                    ("default",),
                    "default 'revise': revise would re-run work nobody asked for; fix: approve "
                    "or kill",
                )
            ],
        ),
        (
            {"deadline": 5000, "default": "later"},
            [
                (
                    ("default",),
                    "default 'later': it is not a decision a deadline takes; fix: approve or kill",
                )
            ],
        ),
        (
            {"deadline": 5000},
            [
                (
                    ("default",),
                    "a deadline needs the decision it takes; fix: add default: approve or "
                    "default: kill",
                )
            ],
        ),
        (
            {"default": "approve"},
            [
                (
                    ("deadline",),
                    "default 'approve' has no deadline to apply at; fix: add deadline (ms), or "
                    "drop default",
                )
            ],
        ),
        ({"escalate": {"after_ms": 1000}}, []),
        ({"escalate": {"after_ms": 7_776_000_000}}, []),
        (
            {"escalate": {"after_ms": 999}},
            [(("escalate", "after_ms"), f"after_ms=999 is outside {SPAN}; fix: give ms in range")],
        ),
        (
            {"escalate": {"after_ms": 7_776_000_001}},
            [
                (
                    ("escalate", "after_ms"),
                    f"after_ms=7776000001 is outside {SPAN}; fix: give ms in range",
                )
            ],
        ),
        ({"deadline": 5000, "default": "kill", "escalate": {"after_ms": 4999}}, []),
        (
            {"deadline": 5000, "default": "kill", "escalate": {"after_ms": 5000}},
            [
                (
                    ("escalate", "after_ms"),
                    "after_ms=5000 is not before the deadline (5000 ms): the default would "
                    "decide first; fix: escalate earlier",
                )
            ],
        ),
    ],
)
def test_deadline_problems(fields: dict[str, Any], problems: list[Any]) -> None:
    assert deadline_problems(gate(**fields)) == problems


def test_schedule_and_timed() -> None:
    timed = schedule(gate(deadline=5000, default="kill", escalate={"after_ms": 2000}))
    assert timed == GateSchedule(escalate_ms=2000, deadline_ms=5000, default="kill")
    assert timed.timed
    assert schedule(gate()) == GateSchedule(None, None, None)
    assert not schedule(gate()).timed
    assert schedule(gate(escalate={"after_ms": 2000})).timed
    assert schedule(gate(deadline=5000, default="approve")).timed


def test_notifiers_named() -> None:
    p = Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [
                {
                    "id": "a",
                    "kind": "gate",
                    "gate": {"escalate": {"after_ms": 1000, "notify": "n"}},
                },
                {"id": "b", "kind": "gate", "gate": {"escalate": {"after_ms": 1000}}},
                {
                    "id": "c",
                    "kind": "gate",
                    "gate": {"escalate": {"after_ms": 1000, "notify": "n"}},
                },
                {
                    "id": "d",
                    "kind": "gate",
                    "gate": {"escalate": {"after_ms": 1000, "notify": "m"}},
                },
                {"id": "e", "kind": "gate", "prompt": "x"},
                {"id": "f", "kind": "agent", "prompt": "x"},
                {"id": "g", "kind": "gate", "gate": {}},
            ],
        }
    )
    assert notifiers_named(p) == {"n": ["a", "c"], "m": ["d"]}


# -- model ------------------------------------------------------------------------------------


def step(**fields: Any) -> dict[str, Any]:
    return {"id": "a", "kind": "agent", "prompt": "x", **fields}


def test_vendor_keys_refuse_non_finite_numbers_at_any_depth() -> None:
    ok = AgentStep.model_validate(step(**{"x-note": {"k": [1.5, {"z": 2.0}]}}))
    assert ok.vendor("x-note") == {"k": [1.5, {"z": 2.0}]}
    for bad in (float("nan"), [1.0, float("inf")], {"k": {"j": float("-inf")}}):
        with pytest.raises(ValidationError, match="finite"):
            AgentStep.model_validate(step(**{"x-bad": bad}))
    with pytest.raises(ValidationError, match="unknown field 'extra'"):
        AgentStep.model_validate(step(extra=1))


def test_when_is_dumped_only_when_set() -> None:
    assert "when" not in AgentStep.model_validate(step()).model_dump()
    assert AgentStep.model_validate(step(when="true")).model_dump()["when"] == "true"


def test_an_ensure_entry_given_as_a_model_keeps_its_form() -> None:
    built = AgentStep(kind="agent", id="a", prompt="x", ensure=[EnsureExpr(expr="true")])
    assert built.ensure == [EnsureExpr(expr="true")]


def test_a_human_gate_makes_no_model_call() -> None:
    human = GateStep.model_validate({"id": "g", "kind": "gate", "gate": {}})
    model = GateStep.model_validate({"id": "m", "kind": "gate", "prompt": "x"})
    assert human.is_human() and human.attempts() == 0
    assert not model.is_human() and model.attempts() == 1


def test_plan_step_names_the_missing_id() -> None:
    p = Plan.model_validate({"schema": "ponder-plan/1", "name": "p", "steps": [step()]})
    assert p.step("a").id == "a"
    with pytest.raises(KeyError) as caught:
        p.step("ghost")
    assert caught.value.args == ("ghost",)
