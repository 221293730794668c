"""Direct unit tests of a plan's history estimate (workflows.plan.limits), each figure worked
out by hand from the per-activity costs: 6 events an activity, 12 a wait, 5 a timer, 16 a
consumer issuance, 9 a child workflow, 30 for the run itself."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.plan.limits import estimate_history, events_per_invocation, limit_errors
from workflows.plan.model import AgentStep, GateStep, Plan, SetStep


def plan(steps: list[dict[str, Any]], **fields: Any) -> Plan:
    return Plan.model_validate({"schema": "ponder-plan/1", "name": "p", "steps": steps, **fields})


def agent(sid: str = "a", **fields: Any) -> dict[str, Any]:
    return {"id": sid, "kind": "agent", "prompt": "x", **fields}


@pytest.mark.parametrize(
    ("fields", "events"),
    [
        ({}, 6),  # the model call
        ({"artifacts": {"reads": ["a"]}}, 12),  # and the path check
        ({"artifacts": {"writes": ["a"]}, "deliverable": "file"}, 24),  # and snapshot, landed
        ({"ensure": [{"expr": "true"}, {"expr": "false"}]}, 12),  # one evaluate marker
        ({"ensure": [{"file_exists": "f"}]}, 12),  # the file probe
        ({"iterate": {"max": 2, "until": "true"}}, 12),  # the until marker
        ({"dispatch": "consumer"}, 16),  # an issuance instead of the call
        ({"dispatch": "consumer", "artifacts": {"reads": ["a"]}}, 22),
    ],
)
def test_events_per_invocation(fields: dict[str, Any], events: int) -> None:
    assert events_per_invocation(AgentStep.model_validate(agent(**fields))) == events


def test_events_per_invocation_of_other_steps() -> None:
    gate = GateStep.model_validate({"id": "g", "kind": "gate", "prompt": "x"})
    assert events_per_invocation(gate) == 6
    read = GateStep.model_validate(
        {"id": "g", "kind": "gate", "prompt": "x", "artifacts": {"reads": ["f"]}}
    )
    assert events_per_invocation(read) == 12
    assert (
        events_per_invocation(SetStep.model_validate({"id": "s", "kind": "set", "set": {"k": "1"}}))
        == 6
    )


FAN: dict[str, Any] = {"id": "f", "kind": "fanout", "fanout": {"over": [1, 2, 3], "chain": ["m"]}}


@pytest.mark.parametrize(
    ("steps", "fields", "events", "passes", "biggest", "biggest_events"),
    [
        ([agent()], {}, 30 + 6 + 12, 1, "a", 18),
        ([agent(retry={"max_attempts": 3})], {}, 30 + 3 * 6 + 12, 1, "a", 30),
        (
            [{"id": "p", "kind": "pause", "pause": {"state": "S", "resume_arg": "v"}}],
            {},
            42,
            1,
            "p",
            12,
        ),
        # a human gate: the wait, the deadline and escalation timers, the post, and preflight's
        # notifier check
        (
            [
                {
                    "id": "g",
                    "kind": "gate",
                    "gate": {
                        "deadline": 5000,
                        "default": "kill",
                        "escalate": {"after_ms": 1000, "notify": "n"},
                    },
                }
            ],
            {},
            30 + 6 + 28,
            1,
            "g",
            28,
        ),
        (
            [{"id": "g", "kind": "gate", "gate": {"escalate": {"after_ms": 1000}}}],
            {},
            30 + 17,
            1,
            "g",
            17,
        ),
        ([{"id": "s", "kind": "set", "set": {"k": "1"}}], {}, 42, 1, "s", 12),
        ([agent()], {"training_pairs": True}, 30 + 12 + 12, 1, "a", 24),
        ([{"id": "t", "kind": "tournament", "prompt": "x"}], {}, 30 + 21, 1, "t", 21),
        # three items, one pacing timer
        ([FAN, agent("m")], {}, 30 + 3 * 6 + 5 + 12, 1, "f", 35),
        # isolated: base, merge, land and two per item, and preflight's git probe
        (
            [{**FAN, "fanout": {**FAN["fanout"], "isolation": "worktree"}}, agent("m")],
            {},
            30 + 6 + 35 + 9 * 6,
            1,
            "f",
            89,
        ),
        # two revise rounds: three passes over the plan
        (
            [
                agent(),
                {
                    "id": "g",
                    "kind": "gate",
                    "deps": ["a"],
                    "gate": {"on_revise": "a", "max_rounds": 2},
                },
            ],
            {},
            30 + 3 * 30,
            3,
            "a",
            18,
        ),
        # the plan's max_rounds when the gate sets none
        (
            [agent(), {"id": "g", "kind": "gate", "deps": ["a"], "gate": {"on_revise": "a"}}],
            {"max_rounds": 1},
            30 + 2 * 30,
            2,
            "a",
            18,
        ),
        # a route back loops as long as the calls cap (2) lets it
        (
            [agent(), {"id": "g", "kind": "gate", "deps": ["a"], "gate": {"on_approve": "a"}}],
            {},
            30 + 2 * 6 + 2 * 24,
            2,
            "a",
            18,
        ),
        # each pass costs the costliest invocation (a path check: 12 events)
        (
            [
                agent(artifacts={"reads": ["x"]}),
                {"id": "g", "kind": "gate", "deps": ["a"], "gate": {"on_approve": "a"}},
            ],
            {},
            30 + 2 * 12 + 2 * 24,
            2,
            "a",
            24,
        ),
    ],
)
def test_estimate_history(
    steps: list[dict[str, Any]],
    fields: dict[str, Any],
    events: int,
    passes: int,
    biggest: str,
    biggest_events: int,
) -> None:
    estimate = estimate_history(plan(steps, **fields))
    assert (estimate.events, estimate.passes, estimate.biggest_events) == (
        events,
        passes,
        biggest_events,
    )
    assert estimate.biggest is not None and estimate.biggest.step_id == biggest


def test_a_run_step_is_its_children() -> None:
    p = plan(
        [{"id": "r", "kind": "run", "flow": "f"}],
        flows={"f": {"steps": [agent("c1"), agent("c2", artifacts={"reads": ["x"]})]}},
    )
    assert estimate_history(p).events == 30 + 18 + 24


def test_a_forward_route_does_not_loop() -> None:
    p = plan([{"id": "g", "kind": "gate", "gate": {"on_kill": "b"}}, agent("b")])
    assert estimate_history(p).passes == 1
    itself = plan([{"id": "g", "kind": "gate", "gate": {"on_kill": "g"}}, agent("b")])
    assert estimate_history(itself).passes >= 1
    assert estimate_history(itself).events != estimate_history(p).events


def test_limit_errors() -> None:
    items = list(range(5000))
    p = plan(
        [
            {
                "id": "f",
                "kind": "fanout",
                "fanout": {"over": items, "chain": ["m"], "concurrency": 1000},
            },
            agent("m"),
        ]
    )
    assert [(e.code, e.path, e.message) for e in limit_errors(p)] == [
        (
            "fanout.concurrency",
            "steps[0].fanout.concurrency",
            "concurrency=1000 is over the ceiling of 256 branches in flight at once (one "
            "workflow runs them all); fix: concurrency: 256 or less",
        ),
        (
            "plan.too_large",
            "steps[0].fanout.over",
            "the plan's worst case is about 30,437 history events, over 25,000 (half of "
            "Temporal's 50,000-event limit for one workflow); the largest boundary, 'f', is "
            "about 30,407 events (5,000 invocation(s)); fix: fewer items (max_fanout), retries, "
            "redos or rounds, or split the work into several runs",
        ),
    ]
    capped = plan(
        [
            agent("z"),
            {
                "id": "f",
                "kind": "fanout",
                "fanout": {"over": items, "chain": ["m"], "max_fanout": 4500},
            },
            agent("m"),
            {"id": "g", "kind": "gate", "gate": {"on_revise": "z", "max_rounds": 1}},
        ]
    )
    (error,) = limit_errors(capped)
    assert (error.code, error.path) == ("plan.too_large", "steps[1].fanout.max_fanout")
    assert error.message.startswith(
        "the plan's worst case is about 54,824 history events over 2 pass(es) (revise rounds), "
        "over 25,000"
    )
    assert "'f', is about 27,367 events (4,500 invocation(s))" in error.message
    assert limit_errors(plan([agent()])) == []
    at = plan(
        [
            {
                "id": "f",
                "kind": "fanout",
                "fanout": {"over": [1], "chain": ["m"], "concurrency": 256},
            },
            agent("m"),
        ]
    )
    assert limit_errors(at) == []
