"""Random plan documents either validate or produce coded errors; never an unhandled exception."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.plans.helpers import LOOP_EXAMPLE_PATH, base
from workflows.plan.errors import CODES
from workflows.plan.model import Plan
from workflows.plan.rules import check_plan
from workflows.plan.validate import Validation, validate_document, validate_text

LOOP = json.loads(LOOP_EXAMPLE_PATH.read_text())
KEYS = [
    "schema", "name", "steps", "id", "kind", "deps", "prompt", "model", "retry", "max_attempts",
    "on", "idempotent", "fanout", "over", "chain", "max_fanout", "concurrency", "join", "gate",
    "on_revise", "max_rounds", "pause", "resume_arg", "state", "fail_route", "max_redos",
    "artifacts", "writes", "deliverable", "out", "contracts", "budget", "calls", "on_fail",
    "tournament", "profile", "x-sim", "ensure", "stepId", "gates", "fanouts", "joins",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "", "draft", "review", "fan", "fan.one", "ask", "t", "agent", "gate", "fanout",
            "pause", "tournament", "set", "all", "any", "quorum:2", "quorum:0", "terminal:x",
            "file", "${steps.draft.output}", "${input.topic}", "${steps.fan.one.output}", "${",
            "../x", "/abs", "ponder-plan/1", "loop-plan/1", "GATE: PASS", "sonnet", "code",
        ]
    ),
    st.text(max_size=12),
)  # fmt: skip
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=20,
)


def _assert_coded(result: Validation) -> None:
    if result.ok:
        assert result.plan is not None and result.errors == []
        again = Plan.model_validate_json(result.plan.model_dump_json())
        assert again == result.plan and check_plan(again) == []
    else:
        assert result.plan is None and result.errors
        for error in result.errors:
            assert error.code in CODES and isinstance(error.path, str) and error.message


def _nodes(doc: Any, out: list[Any]) -> list[Any]:
    out.append(doc)
    children = doc.values() if isinstance(doc, dict) else doc if isinstance(doc, list) else []
    for child in children:
        _nodes(child, out)
    return out


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    doc = copy.deepcopy(draw(st.sampled_from([base(), LOOP])))
    for _ in range(draw(st.integers(1, 4))):
        containers = [n for n in _nodes(doc, []) if isinstance(n, dict | list) and n]
        node = draw(st.sampled_from(containers))
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)) if action != "add" else st.sampled_from(KEYS))
            if action == "delete":
                del node[key]
            else:
                node[key] = draw(JSON)
        else:
            index = draw(st.integers(0, len(node) - 1))
            if action == "delete":
                del node[index]
            elif action == "add":
                node.append(draw(JSON))
            else:
                node[index] = draw(JSON)
    return doc


@settings(derandomize=True, max_examples=400, deadline=None)
@given(JSON)
def test_random_values_get_coded_errors(doc: Any) -> None:
    _assert_coded(validate_document(doc))


@settings(
    derandomize=True, max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(mutated())
def test_mutated_plans_validate_or_get_coded_errors(doc: Any) -> None:
    _assert_coded(validate_document(doc))
    text = json.dumps(doc, allow_nan=True)
    _assert_coded(validate_text(text, filename="plan.json"))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_gets_coded_errors(text: str) -> None:
    _assert_coded(validate_text(text))
    _assert_coded(validate_text("schema: ponder-plan/1\nsteps:\n" + text, filename="p.yaml"))
