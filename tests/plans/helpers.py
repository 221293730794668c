"""Plan documents for the plan tests: one valid base plan that each test bends one way."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from workflows.plan.validate import Validation, validate_document

# The reference's loop-plan/1 example, the contract for the accepted subset.
LOOP_EXAMPLE_PATH = Path(__file__).with_name("loop-plan-1.example.json")

BASE: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "base",
    "contracts": {"Findings": {"items": "string[]", "score": "number?"}},
    "steps": [
        {"id": "ask", "kind": "pause", "pause": {"state": "AWAITING_TOPIC", "resume_arg": "topic"}},
        {
            "id": "draft",
            "kind": "agent",
            "deps": ["ask"],
            "prompt": "Draft notes on ${input.topic}.",
            "model": "sim:default",
            "out": "Findings",
            "retry": {"max_attempts": 2, "on": ["malformed-output"]},
            "idempotent": True,
            "artifacts": {"writes": ["notes/draft.md"]},
            "deliverable": "file",
        },
        {
            "id": "review",
            "kind": "gate",
            "deps": ["draft"],
            "prompt": "Review ${steps.draft.output}. End with GATE: PASS or GATE: FAIL.",
            "fail_route": "draft",
            "max_redos": 1,
        },
        {
            "id": "fan",
            "kind": "fanout",
            "deps": ["review"],
            "fanout": {"over": ["a", "b", "c"], "chain": ["fan.one"], "join": "quorum:2"},
        },
        {"id": "fan.one", "kind": "agent", "prompt": "Handle one item."},
        {
            "id": "ok",
            "kind": "gate",
            "deps": ["fan"],
            "gate": {"on_revise": "draft", "max_rounds": 2},
        },
        {"id": "t", "kind": "tournament", "deps": ["ok"], "prompt": "Best of ${steps.fan.output}"},
    ],
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def step(doc: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in doc["steps"] if s["id"] == step_id)


def codes(result: Validation) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in result.errors]


def check(doc: dict[str, Any]) -> Validation:
    return validate_document(doc)
