"""Pipelined rounds: the same tournament as the barrier run, sooner.

A pair is judged as soon as both of its candidates exist and a population's next judging starts
while its last calls are still out; the fits stay barriers. Every call keeps its key, so with
the same seed the outcome is the barrier run's, whatever order the calls land in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowQueryFailedError,
)
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError

from activities.config import Settings
from tests.fakes import FakeProvider, Reply, Seen, sim_responder
from tests.tournament.helpers import cancel_taken, failure, read_jsonl, run, start
from tests.tournament.test_budget_control import JITTERY_JUDGE, paused_run, progress
from workflows.names import UPDATE_EXTEND_BUDGET
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult

# Heavy-tailed latency, small enough for the suite: completion order differs from the schedule.
JITTERY = "sim:default,latency=lognormal:20,1"
SLOW_MAKER = "sim:default,latency=lognormal:200,1"
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


async def hold_last_candidate_until_judged(client: Client, fake: FakeProvider, run_id: str) -> None:
    """Holds run ``run_id``'s last initial candidate until the workflow has recorded more
    answered calls than the seven other candidates, i.e. a first-judging call: the phases then
    overlap whatever the machine's load (jitter alone left it to chance). Answered, not spent:
    ``spent.calls`` counts a call when it is reserved, so it passed 7 as soon as the held
    candidate itself was sent, and the hold let it go at once. Runs until cancelled."""
    judged = threading.Event()

    def responder(seen: Seen) -> Reply:
        if seen.call_id == f"{run_id}/initial_generation/7/0":
            judged.wait(timeout=60)
        return sim_responder(seen)

    fake.responder = responder
    handle = client.get_workflow_handle(run_id)
    while not judged.is_set():
        with contextlib.suppress(RPCError, WorkflowQueryFailedError):  # not started yet
            now = await progress(handle)
            if now.spent.calls - now.in_flight > 7:
                judged.set()
        await asyncio.sleep(0.05)


async def test_pipelined_rounds_give_the_barrier_result(
    client: Client, queue: str, fake: FakeProvider
) -> None:
    common: dict[str, Any] = {
        "profile": "balanced",
        "seed": 16,
        "model": JITTERY,
        # The candidates come through the fake (the sim's text), so the pipelined run's last
        # one can be held until a first-judging call has landed: its phases overlap whatever
        # the load (a latency tail alone left it to the workflow's turnaround). The mutants
        # keep a heavier tail, so later phases may overlap too.
        "models": {"generate": "local:default", "mutate": SLOW_MAKER},
        "concurrency": {"generate": 4, "judge": 4, "mutate": 4},
    }
    barrier = await run(client, queue, rounds="barrier", **common)
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    holding = asyncio.create_task(hold_last_candidate_until_judged(client, fake, run_id))
    try:
        pipelined = await run(client, queue, rounds="pipelined", run_id=run_id, **common)
    finally:
        holding.cancel()

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
    barrier = await run(client, queue, rounds="barrier", **common)
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


async def test_a_budget_pause_mid_run_holds_the_cap_and_resumes_to_the_barrier_result(
    client: Client, queue: str, fake: FakeProvider
) -> None:
    """The cap (the plan's 60 calls, which invalid-JSON retries pass) falls with calls in
    flight: none past it reaches the provider, and after ``extend`` the run ends as the
    barrier run does."""
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    holding = asyncio.create_task(hold_last_candidate_until_judged(client, fake, run_id))
    handle = await paused_run(client, queue, max_calls=60, rounds="pipelined", run_id=run_id)
    assert holding.done() and holding.result() is None  # judged before the pause (call 60)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while (paused := await progress(handle)).in_flight:  # the reserved calls still landing
        assert loop.time() < deadline, f"{paused.in_flight} calls still in flight"
        await asyncio.sleep(0.05)
    assert paused.status == "awaiting_budget" and paused.blocking_limit == "max_calls"
    assert paused.spent.calls == len(fake.seen) == 60
    await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=200), result_type=ExtendBudgetResult
    )
    pipelined = await handle.result()
    assert pipelined.status == "completed" and len(fake.seen) == pipelined.spent.calls > 60
    barrier = await run(client, queue, profile="balanced", seed=4, model=JITTERY_JUDGE,
                        invalid_json_retries=3, rounds="barrier")  # fmt: skip
    assert outcome(Path(pipelined.run_dir)) == outcome(Path(barrier.run_dir))
    assert overlaps(Path(pipelined.run_dir)) != []  # it did run phases side by side


async def test_cancel_while_phases_overlap_drains_and_starts_no_waiting_pair(
    client: Client, queue: str, settings: Settings, fake: FakeProvider
) -> None:
    """Cancelled while the first judging runs beside a generation call still out: the calls in
    flight land and are recorded, and the pairs waiting for that candidate never start."""
    late = threading.Event()

    def responder(seen: Seen) -> Reply:
        if seen.call_id.endswith("/initial_generation/7/0"):
            late.wait(timeout=120)  # g0-c7 lands only after the cancel
        return sim_responder(seen)

    fake.responder = responder
    fake.hold_when = lambda seen: seen.phase == "generation_judging:1"
    handle = await start(client, queue, profile="balanced", seed=4, model="local:default",
                         rounds="pipelined")  # fmt: skip
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not any(s.phase == "generation_judging:1" for s in fake.seen):
        assert loop.time() < deadline, "no pair was judged while g0-c7 was being made"
        await asyncio.sleep(0.05)
    await handle.cancel()
    # The workflow has taken the cancel before anything is released (the request only being
    # recorded was not enough: under load g0-c7's answer could reach the same workflow task).
    await cancel_taken(handle)
    late.set()
    fake.resume()
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    run_dir = settings.runs_dir / handle.id
    usage = read_jsonl(run_dir / "usage.jsonl")
    assert sorted(u["usage_id"] for u in usage) == sorted(s.call_id for s in fake.seen)
    assert f"{handle.id}/initial_generation/7/0" in {u["usage_id"] for u in usage}
    judged = [s for s in fake.seen if s.phase == "generation_judging:1"]
    assert judged and not any("g0-c7" in json.dumps(s.body) for s in judged)
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "cancelled"
