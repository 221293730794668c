"""Hard call cap under concurrency, pause and extend in the same run, cancel, queries."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import CancelledError

from activities.call_model import CALL_MODEL
from activities.config import Price, Settings
from tests.fakes import FakeProvider, Reply, Seen, sim_responder
from tests.tournament.helpers import cancel_taken, read_jsonl, start
from workflows.budget import BudgetLimits
from workflows.names import QUERY_EVENTS, QUERY_PROGRESS, SIGNAL_EXTEND_BUDGET, UPDATE_EXTEND_BUDGET
from workflows.tournament.profiles import Profile
from workflows.tournament.types import Event, ExtendBudgetInput, ExtendBudgetResult, Progress

# balanced = 60 nominal calls; 25% invalid judge output spends the retry headroom, so a cap of
# 60 falls in the middle of a judging phase with 8 calls in flight.
JITTERY_JUDGE = "local:default,invalid_json_rate=0.25,latency=uniform:0-30"


async def progress(handle: WorkflowHandle) -> Progress:
    return await handle.query(QUERY_PROGRESS, result_type=Progress)


async def wait_for_status(handle: WorkflowHandle, status: str, timeout: float = 60) -> Progress:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        current = await progress(handle)
        if current.status == status:
            return current
        now = asyncio.get_running_loop().time()
        assert now < deadline, f"still {current.status}: {current.error}"
        await asyncio.sleep(0.1)


def calls_before_the_extension(history: Any) -> int:
    """Model calls the run scheduled before its first accepted budget extension: with the run
    paused, none may be scheduled until one arrives (read from history, not from a wait)."""
    calls = 0
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            return calls
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            calls += event.activity_task_scheduled_event_attributes.activity_type.name == CALL_MODEL
    raise AssertionError("no budget extension was accepted")


async def paused_run(client: Client, queue: str, max_calls: int, **fields: Any) -> WorkflowHandle:
    handle = await start(
        client,
        queue,
        profile="balanced",
        seed=4,
        model=JITTERY_JUDGE,
        invalid_json_retries=3,
        budget=BudgetLimits(max_calls=max_calls),
        **fields,
    )
    await wait_for_status(handle, "awaiting_budget")
    return handle


async def test_cap_holds_under_concurrency_and_extend_resumes_the_same_run(
    client: Client, queue: str, fake: FakeProvider
) -> None:
    handle = await paused_run(client, queue, max_calls=60)
    first_run_id = (await handle.describe()).run_id
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while len(fake.seen) < 60:  # the reserved calls still landing
        assert loop.time() < deadline, f"only {len(fake.seen)} calls arrived"
        await asyncio.sleep(0.05)
    assert len(fake.seen) == 60
    paused = await progress(handle)
    assert paused.spent.calls == 60
    assert paused.blocking_limit == "max_calls"
    assert paused.phase.startswith(("generation_judging", "final_judging"))

    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(
            UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=10), result_type=ExtendBudgetResult
        )
    assert "below what is already spent" in str(refused.value.cause)

    extended = await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=200), result_type=ExtendBudgetResult
    )
    assert extended.budget.max_calls == 200
    result = await handle.result()
    assert result.status == "completed"
    assert (await handle.describe()).run_id == first_run_id
    history = await handle.fetch_history()
    types = {event.event_type for event in history.events}
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW not in types
    assert calls_before_the_extension(history) == 60  # nothing more started while paused
    assert len(fake.seen) == result.spent.calls > 60
    events = [e["type"] for e in read_jsonl(Path(result.run_dir) / "events.jsonl")]
    assert "budget.paused" in events and "budget.resumed" in events


async def test_signal_form_extends_and_a_refused_signal_is_recorded(
    client: Client, queue: str
) -> None:
    handle = await paused_run(client, queue, max_calls=60)
    await handle.signal(SIGNAL_EXTEND_BUDGET, ExtendBudgetInput(max_calls=5))
    await handle.signal(SIGNAL_EXTEND_BUDGET, {"max_calls": -1})  # raw: the model refuses it
    refused: list[Event] = []
    deadline = asyncio.get_running_loop().time() + 60
    while len(refused) < 2:
        assert asyncio.get_running_loop().time() < deadline, "the signals were not recorded"
        events = await handle.query(QUERY_EVENTS, 0, result_type=list[Event])
        refused = [e for e in events if e.type == "control.refused"]
        await asyncio.sleep(0.05)
    assert "max_calls=5" in refused[0].data["reason"]
    assert "greater than or equal to 0" in refused[1].data["reason"]  # refused, not fatal
    paused = await progress(handle)
    assert paused.status == "awaiting_budget"
    assert len(paused.refused) == 2  # visible in status too
    await handle.signal(SIGNAL_EXTEND_BUDGET, ExtendBudgetInput(max_calls=300))
    assert (await handle.result()).status == "completed"
    later = await handle.query(QUERY_EVENTS, refused[0].seq, result_type=list[Event])
    assert all(e.seq > refused[0].seq for e in later)


async def test_cancel_while_paused_ends_cancelled_with_usage_recorded(
    client: Client, queue: str, settings: Settings
) -> None:
    handle = await paused_run(client, queue, max_calls=60)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    run_dir = settings.runs_dir / handle.id
    assert len(read_jsonl(run_dir / "usage.jsonl")) == 60
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "cancelled"
    assert summary["calls"]["used"] == 60


async def test_cancel_mid_phase_drains_calls_in_flight(
    client: Client, queue: str, settings: Settings, fake: FakeProvider
) -> None:
    fake.hold_when = lambda seen: seen.phase == "generation_judging:1"
    handle = await start(client, queue, profile="balanced", seed=4, model="local:default")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while len([s for s in fake.seen if s.phase == "generation_judging:1"]) < 8:
        assert loop.time() < deadline, "the first judging batch never reached the fake"
        await asyncio.sleep(0.05)
    # A soft cap would have started a ninth call in the batch that started these: it would be
    # held too, then released and recorded below.
    in_flight = [s for s in fake.seen if s.phase == "generation_judging:1"]
    await handle.cancel()
    # The workflow has taken the cancel (a workflow task completed after its request) before
    # anything is released, so the answers reach a run already cancelling: the order this test
    # means to check. A fixed 0.3 s after the request did not ensure it under load.
    await cancel_taken(handle)
    fake.resume()
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    usage = read_jsonl(settings.runs_dir / handle.id / "usage.jsonl")
    judged = [u for u in usage if u["phase"] == "generation_judging:1"]
    assert len(judged) == len(in_flight) == 8  # drained and recorded, nothing new started
    assert len(fake.seen) == 8 + 8


async def test_cancel_while_finalizing_ends_cancelled_not_failed(
    client: Client, queue: str, settings: Settings, fake: FakeProvider
) -> None:
    from workflows.tournament.types import RoleModels

    fake.hold_when = lambda seen: seen.phase == "finalizing"
    handle = await start(
        client, queue, profile="quick", seed=2, models=RoleModels(finalize="local:default")
    )
    deadline = asyncio.get_running_loop().time() + 60
    while not any(s.phase == "finalizing" for s in fake.seen):
        assert asyncio.get_running_loop().time() < deadline, "finalizing never started"
        await asyncio.sleep(0.05)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    assert isinstance(info.value.cause, CancelledError)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    summary = json.loads((settings.runs_dir / handle.id / "summary.json").read_text())
    assert summary["status"] == "cancelled"
    usage = read_jsonl(settings.runs_dir / handle.id / "usage.jsonl")
    assert usage[-1]["phase"] == "finalizing" and usage[-1]["error_code"] == "cancelled"
    fake.resume()


# Every call through the fake reports 12 prompt tokens (no cache rate): at 1000 USD per million
# input tokens and nothing for output, each call costs exactly PER_CALL, whatever its text.
PER_CALL = 12 * 1000.0 / 1_000_000
USD_PRICE = Price(input=1000.0, output=0.0)


async def test_max_usd_pauses_within_the_in_flight_window_and_extends_in_the_same_run(
    client: Client, queue: str, fake: FakeProvider, settings: Settings
) -> None:
    """USD is known only after a response, so calls already in flight when ``max_usd`` is reached
    still land: spend may pass the limit by at most the in-flight window, c calls of at most
    PER_CALL each (the tournament spec's bound), and never by more."""
    concurrency = 8
    limit = 10.5 * PER_CALL  # reached by the 11th answer, with the generation phase under way

    def slow_sim(seen: Seen) -> Reply:  # calls overlap, so the window is really full
        reply = sim_responder(seen)
        reply.delay_s = 0.05
        return reply

    fake.responder = slow_sim
    handle = await start(
        client,
        queue,
        custom=Profile(n=20, k=2, t=0, m=2),  # 20 generations, then 20 final judge calls
        seed=8,
        model="local:default",
        prices={"local:default": USD_PRICE},
        concurrency={"generate": concurrency, "judge": concurrency},
        budget=BudgetLimits(max_usd=limit),
    )
    paused = await wait_for_status(handle, "awaiting_budget")
    deadline = asyncio.get_running_loop().time() + 60
    while (paused := await progress(handle)).in_flight:  # the window drains
        assert asyncio.get_running_loop().time() < deadline, f"{paused.in_flight} in flight"
        await asyncio.sleep(0.05)
    paused = await progress(handle)
    assert paused.status == "awaiting_budget" and paused.blocking_limit == "max_usd"
    assert paused.in_flight == 0
    assert len(fake.seen) == paused.spent.calls
    assert paused.spent.usd == pytest.approx(paused.spent.calls * PER_CALL)
    # The pause's files come once the window has drained: every landed call has its usage row,
    # the ones that were still in flight at the pause too (nothing else writes while it waits).
    usage = settings.runs_dir / handle.id / "usage.jsonl"
    while not usage.exists() or len(read_jsonl(usage)) < paused.spent.calls:
        assert asyncio.get_running_loop().time() < deadline, "the paused files miss landed calls"
        await asyncio.sleep(0.05)
    assert len(read_jsonl(usage)) == paused.spent.calls
    # Reserved only while spend < limit: at most floor(limit / PER_CALL) answers were in when the
    # last call was reserved, plus the c calls then in flight.
    assert paused.spent.calls <= math.floor(limit / PER_CALL) + concurrency
    assert paused.spent.usd <= limit + concurrency * PER_CALL + 1e-12
    # Not vacuous: calls in flight at the crossing did land after it (the 11th alone crosses).
    assert paused.spent.calls > math.ceil(limit / PER_CALL)
    # Pipelined rounds (the default): the final judging began beside the generation, and the
    # one provider both call kept the window at ``concurrency`` calls for the two phases.
    assert paused.phase == "final_judging"

    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(
            UPDATE_EXTEND_BUDGET,
            ExtendBudgetInput(max_usd=limit),
            result_type=ExtendBudgetResult,
        )
    assert "max_usd" in str(refused.value.cause) and "below what is already spent" in str(
        refused.value.cause
    )
    first_run_id = (await handle.describe()).run_id
    extended = await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_usd=1.0), result_type=ExtendBudgetResult
    )
    assert extended.budget.max_usd == 1.0
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.status == "completed"
    assert (await handle.describe()).run_id == first_run_id  # the same run, continued
    assert result.spent.calls == len(fake.seen) == 40  # every call made once, none lost
    assert result.spent.usd == pytest.approx(40 * PER_CALL)
    # Nothing new started while paused: every call before the extension was already counted.
    assert calls_before_the_extension(await handle.fetch_history()) == paused.spent.calls
    events = [e["type"] for e in read_jsonl(Path(result.run_dir) / "events.jsonl")]
    assert events.count("budget.paused") == 1 and "budget.resumed" in events
