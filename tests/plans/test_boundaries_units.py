"""Direct unit tests of a region's lanes and worst case (workflows.plan.boundaries)."""

from __future__ import annotations

from typing import Any

from workflows.plan.boundaries import (
    DEFAULT_STAGE_TIMEOUT_MS,
    DEFAULT_TOURNAMENT_TIMEOUT_MS,
    MAX_CONCURRENCY,
    Reservation,
    activated_items,
    boundaries,
    lanes,
    tournament_calls,
    worst_items,
)
from workflows.plan.model import FanoutStep, Plan, TournamentStep


def fanout(**spec: Any) -> FanoutStep:
    return FanoutStep.model_validate(
        {"id": "f", "kind": "fanout", "fanout": {"chain": ["m"], **spec}}
    )


def test_lanes() -> None:
    assert lanes(fanout(over=[1, 2, 3]), 3) == 1  # nothing asked for parallel branches
    assert lanes(fanout(over=[1, 2, 3], max_fanout=2), 3) == 2
    assert lanes(fanout(over=[1, 2, 3], max_fanout=2, concurrency=3), 3) == 3
    assert lanes(fanout(over=[1, 2, 3], concurrency=9), 3) == 3  # at most the items
    assert lanes(fanout(over=[1], concurrency=5000), 5000) == MAX_CONCURRENCY
    assert lanes(fanout(over=[]), 0) == 1  # never zero


def test_worst_items() -> None:
    assert worst_items(fanout(over=[1, 2, 2, 3])) == 4
    assert worst_items(fanout(over=[1, 2, 2, 3], dedup=True)) == 3
    assert worst_items(fanout(over=[1, 2, 2, 3], max_fanout=2)) == 2
    assert worst_items(fanout(over="${steps.a.output}", max_fanout=7)) == 7
    assert worst_items(fanout(over="${steps.a.output}")) == 0


def test_activated_items() -> None:
    items = [{"b": 1, "a": 2}, {"a": 2, "b": 1}, 3, 3]
    assert activated_items(items, dedup=False, max_fanout=None) == items
    assert activated_items(items, dedup=True, max_fanout=None) == [{"b": 1, "a": 2}, 3]
    assert activated_items(items, dedup=True, max_fanout=1) == [{"b": 1, "a": 2}]
    assert activated_items(items, dedup=False, max_fanout=0) == []


def test_a_tournament_reserves_one_stage_and_a_run_step_its_children() -> None:
    plan = Plan.model_validate(
        {
            "schema": "ponder-plan/1",
            "name": "p",
            "steps": [
                {"id": "t", "kind": "tournament", "prompt": "x"},
                {"id": "r", "kind": "run", "flow": "f"},
            ],
            "flows": {"f": {"steps": [{"id": "c", "kind": "agent", "prompt": "x"}]}},
        }
    )
    tournament, run = boundaries(plan)
    step = plan.steps[0]
    assert isinstance(step, TournamentStep)
    assert tournament.kind == "tournament"
    # its calls run inside one child workflow: one stage timeout, however many calls
    assert tournament.reservation == Reservation(
        tournament_calls(step), DEFAULT_TOURNAMENT_TIMEOUT_MS
    )
    assert (run.kind, run.reservation, run.members) == ("run", Reservation(0, 0), ("c",))
    (child,) = run.children
    assert (child.step_id, child.scope, child.reservation) == (
        "c",
        "r",
        Reservation(1, DEFAULT_STAGE_TIMEOUT_MS),
    )
