"""The no-overhead replay of a run's schedule (``benchmarks/critical_path.py``), by hand."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.critical_path import Call, Phase, barrier_wall, phases_of_run, pipelined_wall

# a, b and c are made in 1, 3 and 1 s; then (a, c) is judged in 2 s and (a, b) in 1 s.
PHASES = [
    Phase("initial_generation", "make", (Call(1, makes="a"), Call(3, makes="b"),
                                         Call(1, makes="c"))),
    Phase("generation_judging:1", "judge", (Call(2, needs=("a", "c")), Call(1, needs=("a", "b")))),
]  # fmt: skip


def test_barrier_runs_each_phase_after_the_one_before() -> None:
    assert barrier_wall(PHASES, width=1) == 5 + 3
    assert barrier_wall(PHASES, width=2) == 3 + 2  # a, c then b; both pairs side by side


def test_pipelined_judges_each_pair_once_its_candidates_exist() -> None:
    # Each lane 1 wide: (a, b) is ready at 4, before (a, c) at 5, so it goes first: 4-5, 5-7.
    assert pipelined_wall(PHASES, width=1) == 7
    # One slot shared: c (queued first) 4-5, then (a, b) 5-6 and (a, c) 6-8.
    assert pipelined_wall(PHASES, width=1, run_width=1) == 8
    assert pipelined_wall(PHASES, width=2) == 4  # (a, c) at 2-4 beside b, (a, b) 3-4


def test_candidates_made_before_a_judging_exist_at_once() -> None:
    judging = Phase("generation_judging:2", "judge", (Call(1, needs=("g1-e0", "g1-m0")),))
    mutation = Phase("generation_mutation:1", "make", (Call(3, makes="g1-m0"),))
    assert pipelined_wall([judging], width=1) == 1
    assert pipelined_wall([mutation, judging], width=1) == 3 + 1


def test_a_run_directory_gives_its_phases_with_the_latencies_it_saw(tmp_path: Path) -> None:
    # In landing order (a judging's first row can come before the generation's first, as a
    # pipelined judging's can before the mutation's); the phases come back in the loop's order.
    usage = [("generation_judging:1/0/0", 500), ("initial_generation/0/0", 1000),
             ("finalizing/0/0", 9000), ("initial_generation/1/0", 2000),
             ("generation_judging:1/0/1", 250)]  # fmt: skip
    (tmp_path / "usage.jsonl").write_text(
        "".join(json.dumps({"usage_id": f"r/{key}", "latency_ms": ms}) + "\n" for key, ms in usage)
    )
    comparison = {"phase": "generation_judging:1", "id": "generation_judging:1#0",
                  "presented_a": "g0-c1", "presented_b": "g0-c0"}  # fmt: skip
    (tmp_path / "comparisons.jsonl").write_text(json.dumps(comparison) + "\n")
    assert phases_of_run(tmp_path) == [
        Phase("initial_generation", "make", (Call(1.0, makes="g0-c0"), Call(2.0, makes="g0-c1"))),
        Phase("generation_judging:1", "judge", (Call(0.75, needs=("g0-c1", "g0-c0")),)),
    ]  # an invalid-output retry runs in its call's slot; the finalizer is left out
