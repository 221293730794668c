"""Pipelined rounds (issue 16 §3): the same tournament as the barrier run, sooner.

A pair is judged as soon as both of its candidates exist and a population's next judging starts
while its last calls are still out; the fits stay barriers. Every call keeps its key, so with
the same seed the outcome is the barrier run's, whatever order the calls land in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.config import Settings
from tests.fakes import FakeProvider, Reply, Seen, sim_responder
from tests.tournament.helpers import failure, read_jsonl, run

# Heavy-tailed latency, small enough for the suite: completion order differs from the schedule.
JITTERY = "sim:default,latency=lognormal:20,1"
# Candidates are made before the phase that judges them.
MAKES = {"generation_judging:1": "initial_generation", "generation_judging:2":
         "generation_mutation:1", "final_judging": "generation_mutation:2"}  # fmt: skip


def outcome(run_dir: Path) -> dict[str, Any]:
    """Everything the schedule decides: candidates, comparison rows, score rows, the winner."""
    candidates = read_jsonl(run_dir / "candidates.jsonl")
    for row in candidates:
        row.pop("created_at")  # the time it landed
    return {
        "candidates": candidates,
        "comparisons": read_jsonl(run_dir / "comparisons.jsonl"),
        "scores": read_jsonl(run_dir / "scores.jsonl"),
        "populations": sorted(p.read_text() for p in run_dir.glob("population-*.json")),
    }


def overlaps(run_dir: Path) -> list[str]:
    """The judging phases with a call that landed before the last call making its candidates
    (``usage.jsonl`` is in landing order)."""
    phases = [row["phase"] for row in read_jsonl(run_dir / "usage.jsonl")]
    return [
        judged
        for judged, made in MAKES.items()
        if judged in phases
        and phases.index(judged) < max(i for i, phase in enumerate(phases) if phase == made)
    ]


async def test_pipelined_rounds_give_the_barrier_result(client: Client, queue: str) -> None:
    common: dict[str, Any] = {
        "profile": "balanced",
        "seed": 16,
        "model": JITTERY,
        "concurrency": {"generate": 4, "judge": 4, "mutate": 4},
    }
    barrier = await run(client, queue, **common)
    pipelined = await run(client, queue, rounds="pipelined", **common)

    assert pipelined.winner_id == barrier.winner_id
    assert pipelined.leaderboard == barrier.leaderboard
    assert pipelined.spent.calls == barrier.spent.calls == 60
    assert outcome(Path(pipelined.run_dir)) == outcome(Path(barrier.run_dir))
    # Not vacuous: the barrier run never judged early, the pipelined one did.
    assert overlaps(Path(barrier.run_dir)) == []
    assert overlaps(Path(pipelined.run_dir)) != []


async def test_pipelined_panel_judging_gives_the_barrier_result(client: Client, queue: str) -> None:
    """Several calls per pair (both orders): each waits for the pair's candidates."""
    common: dict[str, Any] = {"profile": "quick", "seed": 3, "model": JITTERY,
                              "judge_orders": "both"}  # fmt: skip
    barrier = await run(client, queue, **common)
    # A call on a candidate not made yet fails its workflow task, retried forever: bounded here.
    pipelined = await asyncio.wait_for(run(client, queue, rounds="pipelined", **common), 60)
    assert pipelined.spent.calls == barrier.spent.calls == 4 + 2 * 4 + 3 + 2 * 4
    assert outcome(Path(pipelined.run_dir)) == outcome(Path(barrier.run_dir))


async def test_a_failed_call_fails_a_pipelined_run_with_its_code(
    client: Client, queue: str, fake: FakeProvider, settings: Settings
) -> None:
    """A mutant that is never made: the pairs waiting for it are dropped, the run fails with
    the mutation call's own code instead of waiting or of a dropped pair's."""

    def responder(seen: Seen) -> Reply:
        if seen.call_id.endswith("/generation_mutation:1/1/0"):
            return Reply(401, {"error": "bad key"})
        return sim_responder(seen)

    fake.responder = responder
    run_fails = failure(
        client,
        queue,
        profile="quick",
        model="local:default",
        rounds="pipelined",
        run_id="pipelined-fails",
    )
    error = await asyncio.wait_for(run_fails, 60)  # a dropped pair's Dropped: retried forever
    assert error.type == "provider.auth"
    assert "mutate call" in error.message
    usage = read_jsonl(settings.runs_dir / "pipelined-fails" / "usage.jsonl")
    assert [u["phase"] for u in usage if u["outcome"] == "failed"] == ["generation_mutation:1"]
