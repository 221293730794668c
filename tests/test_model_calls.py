"""The workflow side of model calls: one failure-to-code mapping for every workflow, and a long
``Retry-After`` waited out on a durable timer (``waiting_provider``) before the call runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from datetime import datetime

import httpx
import pytest
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from activities.call_model import CALL_MODEL, ModelActivities
from activities.config import Endpoint, Settings
from activities.run_files import RunFileActivities
from activities.run_store import RunStore
from activities.tournament.artifacts import TournamentArtifactActivities
from activities.tournament.fit import adaptive_batch, bootstrap_leaderboard, fit_leaderboard
from tests.collector import close_like_the_collector
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply
from tests.tournament.helpers import read_jsonl
from worker.worker import WORKFLOWS, WorkerOptions, running_worker
from workflows import model_calls
from workflows.ask_types import AskInput, AskResult
from workflows.call_options import CallOptions
from workflows.model_calls import PROVIDER_RETRY_LATER, PROVIDER_TIMEOUT
from workflows.model_types import CallModelInput, ModelResponse
from workflows.names import ASK, QUERY_PROGRESS, TOURNAMENT
from workflows.tournament.types import Progress, TournamentInput, TournamentResult

SHORT = CallOptions(schedule_to_close_s=2.0)


async def _failure(result: Awaitable[object]) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as info:
        await result
    cause = info.value.cause
    assert isinstance(cause, ApplicationError), cause
    return cause


async def test_an_activity_timeout_is_the_same_code_in_ask_and_tournament(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    local = with_endpoint(settings, "local", Endpoint(kind="openai", base_url=fake.url))
    queue = f"test-{uuid.uuid4()}"
    fake.hold()  # no answer: each call runs into its 2 s schedule-to-close
    try:
        async with running_worker(client, local, WorkerOptions(task_queue=queue)):
            ask = await client.start_workflow(
                ASK,
                AskInput(question="q", model="local:default", calls=SHORT),
                id=f"ask-{uuid.uuid4()}",
                task_queue=queue,
                result_type=AskResult,
            )
            tournament = await client.start_workflow(
                TOURNAMENT,
                TournamentInput(task="t", profile="quick", model="local:default", calls=SHORT),
                id=f"t-{uuid.uuid4()}",
                task_queue=queue,
                result_type=TournamentResult,
            )
            ask_error = await _failure(ask.result())
            tournament_error = await _failure(tournament.result())
            fake.resume()
    finally:
        fake.resume()
    assert ask_error.type == tournament_error.type == PROVIDER_TIMEOUT
    assert "timed out" in ask_error.message and "timed out" in tournament_error.message


class RetryLaterOnce:
    """``call_model`` that first answers as a provider whose quota resets later, then for real.

    Stands in for the activity's side of the contract: ``provider.retry_later`` with
    ``{"retry_after_s": s}`` as its first detail, non-retryable.
    """

    def __init__(self, real: ModelActivities, call_key: str, seconds: float) -> None:
        self.real, self.call_key, self.seconds = real, call_key, seconds
        self.calls: list[tuple[str, float]] = []

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, input: CallModelInput) -> ModelResponse:
        loop = asyncio.get_running_loop()
        self.calls.append((input.call_id, loop.time()))
        if input.call_key == self.call_key and len(self.calls_of(input.call_id)) == 1:
            raise ApplicationError(
                "quota exhausted; resets later",
                {"retry_after_s": self.seconds},
                type=PROVIDER_RETRY_LATER,
                non_retryable=True,
            )
        return await self.real.call_model(input)

    def calls_of(self, call_id: str) -> list[float]:
        return [at for cid, at in self.calls if cid == call_id]


@contextlib.asynccontextmanager
async def retry_later_worker(
    client: Client, settings: Settings, call_key: str, seconds: float
) -> AsyncIterator[tuple[str, RetryLaterOnce]]:
    queue = f"test-{uuid.uuid4()}"
    async with httpx.AsyncClient() as http:
        model = RetryLaterOnce(ModelActivities(settings, http), call_key, seconds)
        store = RunStore(settings.runs_dir)
        worker = Worker(
            client,
            task_queue=queue,
            workflows=WORKFLOWS,
            activities=[
                model.call_model,
                RunFileActivities(store).write_run_files,
                TournamentArtifactActivities(store).write_tournament_artifacts,
                fit_leaderboard,
                adaptive_batch,
                bootstrap_leaderboard,
            ],
        )
        async with worker:
            yield queue, model


async def start_quick_tournament(client: Client, queue: str) -> WorkflowHandle:
    """A quick tournament whose first call is ``initial_generation/0/0``; barrier rounds, so
    while that call waits no judging starts beside it."""
    return await client.start_workflow(
        TOURNAMENT,
        TournamentInput(task="Sort a list.", profile="quick", seed=3, rounds="barrier"),
        id=f"wait-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=TournamentResult,
    )


async def waiting_provider(handle: WorkflowHandle, timeout: float = 60) -> Progress | None:
    """The run's progress while it waits out a provider's retry-after, or None if it ended first.

    Polled until the run shows the wait or ends, not for a count of tries: on a loaded machine
    the first call can take longer than a few seconds to reach the provider at all.
    """
    deadline = time.monotonic() + timeout
    while True:
        progress = await handle.query(QUERY_PROGRESS, result_type=Progress)
        if progress.status == "waiting_provider":
            return progress
        if progress.status in ("completed", "failed", "cancelled"):
            return None
        assert time.monotonic() < deadline, f"still {progress.status} after {timeout} s"
        await asyncio.sleep(0.05)


async def test_a_long_retry_after_waits_on_a_timer_then_goes_on(
    client: Client, settings: Settings
) -> None:
    wait_s = 3.0
    first = "initial_generation/0/0"
    async with retry_later_worker(client, settings, first, wait_s) as (queue, model):
        handle = await start_quick_tournament(client, queue)
        waiting = await waiting_provider(handle)
        result = await asyncio.wait_for(handle.result(), 60)
        after = await handle.query(QUERY_PROGRESS, result_type=Progress)

    assert waiting is not None, "the run never showed waiting_provider"
    assert waiting.waiting_until is not None
    assert datetime.fromisoformat(waiting.waiting_until).tzinfo is not None
    assert result.status == "completed" and after.waiting_until is None
    call_id = f"{handle.id}/{first}"
    attempts = model.calls_of(call_id)
    assert len(attempts) == 2 and attempts[1] - attempts[0] >= wait_s - 0.1
    assert result.spent.calls == 15  # the waited call is one logical call, billed once
    history = await handle.fetch_history()
    timers = [
        e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta().total_seconds()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    ]
    assert timers == [wait_s]
    events = read_jsonl(settings.runs_dir / handle.id / "events.jsonl")
    kinds = [e["type"] for e in events if e["type"].startswith("provider.")]
    assert kinds == ["provider.waiting", "provider.resumed"]


async def test_ask_waits_too(client: Client, settings: Settings) -> None:
    async with retry_later_worker(client, settings, "ask/0/0", 1.0) as (queue, model):
        result = await client.execute_workflow(
            ASK,
            AskInput(question="q"),
            id=f"ask-{uuid.uuid4()}",
            task_queue=queue,
            result_type=AskResult,
        )
    assert result.response.simulated
    assert len(model.calls) == 2


async def test_a_429_with_a_long_retry_after_waits_then_goes_on(
    client: Client, settings: Settings, fake: FakeProvider
) -> None:
    """End to end with the real activity: a Retry-After past the call's schedule-to-close."""
    local = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    )
    retry_after = 6.0
    fake.replies = [Reply(429, {"error": {"message": "quota"}}, {"Retry-After": "6"})]
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, local, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            TOURNAMENT,
            TournamentInput(
                task="Sort a list.",
                profile="quick",
                seed=3,
                model="local:default",
                # The threshold comes from the run's input: a 5 s call cannot wait 6 s inside.
                calls=CallOptions(schedule_to_close_s=5.0),
            ),
            id=f"wait429-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=TournamentResult,
        )
        waiting = await waiting_provider(handle)
        result = await asyncio.wait_for(handle.result(), 90)

    assert waiting is not None and waiting.waiting_until is not None
    assert result.status == "completed" and result.spent.calls == 15
    first = fake.seen[0].call_id
    again = [s for s in fake.seen if s.call_id == first]
    assert len(again) == 2 and again[1].at - again[0].at >= retry_after - 0.5


def test_a_calls_input_travels_without_its_unset_fields_and_old_payloads_still_decode() -> None:
    """A call's scheduled event carries only what the call sets (no nulls, no false json_mode);
    decoding fills in the same defaults, and an older history's payload, nulls and all, decodes
    to the same input."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from workflows.model_types import ModelRequest

    converter = pydantic_data_converter.payload_converter
    call = CallModelInput(
        run_id="r", phase="p", index=1, request=ModelRequest(model="sim:default", prompt="hi")
    )
    payload = converter.to_payloads([call])[0]
    assert b"null" not in payload.data and b"json_mode" not in payload.data
    assert converter.from_payloads([payload], [CallModelInput]) == [call]
    payload.data = (
        b'{"run_id":"r","phase":"p","index":1,"attempt":0,"request":{"model":"sim:default",'
        b'"prompt":"hi","system":null,"role":"ask","temperature":null,"max_output_tokens":null,'
        b'"json_mode":false,"seed":0,"tag":null,"base_url":null,"script":null,"workspace":null,'
        b'"item":null},"replay":null,"chain":null}'
    )
    assert converter.from_payloads([payload], [CallModelInput]) == [call]
    given = call.model_copy(update={"chain": "c1"}, deep=True)
    given.request.json_mode = True
    assert b'"chain":"c1"' in converter.to_payloads([given])[0].data
    assert b'"json_mode":true' in converter.to_payloads([given])[0].data


async def test_a_run_waiting_out_a_retry_after_can_be_closed_outside_its_worker(
    client: Client, settings: Settings
) -> None:
    """A worker that stops leaves its cached runs to the garbage collector, which closes each
    coroutine with ``GeneratorExit`` in whatever thread it runs: the code after the wait must
    not call the workflow API then. Outside an activation that raises, and once, from inside
    another import, Python 3.11's import lock did not survive it (a CI run failed)."""
    first = "initial_generation/0/0"
    async with retry_later_worker(client, settings, first, 600.0) as (queue, _model):
        handle = await start_quick_tournament(client, queue)
        assert await waiting_provider(handle) is not None
    try:  # raised "Not in workflow event loop" from the wait's cleanup
        close_like_the_collector(model_calls.call_model, "input", handle.id)
    finally:
        await handle.terminate("test over")
