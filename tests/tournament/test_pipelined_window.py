"""Pipelined rounds by default, within each provider's width.

A run whose input leaves out ``rounds`` (raw input, as ``temporal workflow start`` sends it)
runs pipelined rounds, and while its phases overlap the one provider every role calls never
has more requests open at once than the widest role's concurrency: the fake provider counts
them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from tests.fakes import FakeProvider, Reply, Seen, sim_responder
from tests.tournament.test_pipelined import hold_last_candidate_until_judged, overlaps
from workflows.activity_contracts import CALL_MODEL
from workflows.names import TOURNAMENT
from workflows.tournament.behaviour import PIPELINED_DEFAULT_PATCH
from workflows.tournament.types import TournamentResult

WIDTH = 4
HISTORY = Path(__file__).parents[1] / "histories" / "tournament-default-rounds.json"


class OpenRequests:
    """Wraps a responder and counts the requests it is answering at once (the most seen)."""

    def __init__(self, fake: FakeProvider) -> None:
        self.inner = fake.responder
        self.lock = threading.Lock()
        self.open = 0
        self.most = 0
        fake.responder = self

    def __call__(self, seen: Seen) -> Reply:
        with self.lock:
            self.open += 1
            self.most = max(self.most, self.open)
        try:
            if seen.phase.endswith("judging:1"):
                # Long enough for every judge slot to fill while the held candidate is out.
                time.sleep(0.1)
            return self.inner(seen)
        finally:
            with self.lock:
                self.open -= 1


async def test_a_run_without_rounds_pipelines_within_its_providers_width(
    client: Client, queue: str, fake: FakeProvider
) -> None:
    run_id = f"t-{uuid.uuid4().hex[:10]}"
    # Holds the last initial candidate until a first-judging call has landed, so the phases
    # overlap whatever the load; the counter wraps that hold.
    holding = asyncio.create_task(hold_last_candidate_until_judged(client, fake, run_id))
    await asyncio.sleep(0)  # the hold sets its responder before its first await
    assert fake.responder is not sim_responder
    requests = OpenRequests(fake)
    raw: dict[str, Any] = {  # no "rounds": the run's default decides
        "task": "Sort a list in place.",
        "profile": "balanced",
        "seed": 16,
        "model": "local:default",
        "concurrency": {"generate": WIDTH, "judge": WIDTH, "mutate": 2},
    }
    try:
        handle = await client.start_workflow(
            TOURNAMENT, raw, id=run_id, task_queue=queue, result_type=TournamentResult
        )
        result = await asyncio.wait_for(handle.result(), 120)
    finally:
        holding.cancel()
    assert result.status == "completed" and result.spent.calls == 60
    run_dir = Path(result.run_dir)
    assert "generation_judging:1" in overlaps(run_dir)  # pipelined: judged beside generation
    # The held candidate kept one slot while judge calls took the rest: lane widths alone
    # would have let WIDTH judge calls beside it.
    assert requests.most == WIDTH


def test_the_saved_default_rounds_history_pipelines_within_the_window() -> None:
    """``tests/histories/tournament-default-rounds.json`` (replayed by ``tests/test_replay.py``)
    is what it claims: one patch marker, the newest; no ``rounds`` in its input; a judging call
    scheduled while a generation call was out; never more calls out than the window (every role
    on the sim provider, each 2 wide)."""
    events = json.loads(HISTORY.read_text())["events"]

    def data(payloads: dict[str, Any]) -> Any:
        return json.loads(base64.b64decode(payloads["payloads"][0]["data"]))

    raw = data(events[0]["workflowExecutionStartedEventAttributes"]["input"])
    assert raw["rounds"] is None
    markers = [
        data(attrs["details"]["patch-data"])["id"]
        for e in events
        if (attrs := e.get("markerRecordedEventAttributes")) and attrs["markerName"] == "core_patch"
    ]
    assert markers == [PIPELINED_DEFAULT_PATCH]
    calls: dict[str, str] = {}  # scheduled event id -> phase
    out: list[str] = []
    most, overlapped = 0, False
    for e in events:
        if (scheduled := e.get("activityTaskScheduledEventAttributes")) and scheduled[
            "activityType"
        ]["name"] == CALL_MODEL:
            phase = data(scheduled["input"])["phase"]
            calls[e["eventId"]] = phase
            overlapped |= phase == "generation_judging:1" and "initial_generation" in out
            out.append(phase)
            most = max(most, len(out))
        elif (done := e.get("activityTaskCompletedEventAttributes")) and done[
            "scheduledEventId"
        ] in calls:
            out.remove(calls[done["scheduledEventId"]])
    assert len(calls) == 15 and not out
    assert overlapped and most == 2
