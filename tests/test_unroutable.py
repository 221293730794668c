"""Input cannot route work where nobody listens.

``calls.provider_queues`` may only name a provider's rate-limit queue (``<queue>.provider.<P>``),
and a routed call that no worker starts within ``UNROUTABLE_AFTER_S`` fails with
``provider.unroutable`` when no worker polls that queue, or waits on when one does (a busy queue
is not a dead one). Real dev server, real workers.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import httpx
import pytest
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from activities.call_model import ModelActivities
from activities.config import Settings
from workflows.ask_types import AskInput, AskResult
from workflows.bounds import UNROUTABLE_AFTER_S
from workflows.call_options import CallOptions, provider_task_queue
from workflows.inputs import InputInvalid, decode_json
from workflows.names import ASK


async def slow_call_started(handle: WorkflowHandle) -> None:
    """Until the run's model call has been picked up by a worker (a generous ceiling)."""
    deadline = time.monotonic() + 120
    while not any(
        activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
        for activity in (await handle.describe()).raw_description.pending_activities
    ):
        assert time.monotonic() < deadline, "the slow call never started"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize(
    ("queues", "needle"),
    [
        ({"sim": "nobody-polls-this"}, "sim: 'nobody-polls-this' is not a rate-limit queue"),
        ({"sim": "ponder.provider.openai"}, "give '<task queue>.provider.sim'"),
        ({"sim": ".provider.sim"}, "is not a rate-limit queue"),
        ({"sim": "a b.provider.sim"}, "is not a rate-limit queue"),
        ({"../x": "q.provider.../x"}, "is not a rate-limit queue"),
    ],
)
def test_input_names_only_a_providers_rate_limit_queue(queues: dict[str, str], needle: str) -> None:
    raw = json.dumps({"question": "q", "calls": {"provider_queues": queues}})
    with pytest.raises(InputInvalid) as info:
        decode_json(AskInput, raw)
    assert info.value.message.startswith("AskInput: calls.provider_queues: Value error, ")
    assert needle in info.value.message
    routed = {"question": "q", "calls": {"provider_queues": {"sim": "ponder.provider.sim"}}}
    assert decode_json(AskInput, json.dumps(routed)).calls.task_queue_for("sim:x") == (
        "ponder.provider.sim"
    )


@pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)
async def test_a_call_routed_where_no_worker_polls_fails_unroutable_within_a_minute(
    client: Client, worker_queue: str
) -> None:
    routed = CallOptions(provider_queues={"sim": provider_task_queue(worker_queue, "sim")})
    began = time.monotonic()
    handle = await client.start_workflow(
        ASK,
        AskInput(question="q", calls=routed),
        id=f"unroutable-{uuid.uuid4().hex[:8]}",
        task_queue=worker_queue,
    )
    with pytest.raises(WorkflowFailureError) as info:
        await asyncio.wait_for(handle.result(), UNROUTABLE_AFTER_S + 30)
    took = time.monotonic() - began
    cause = info.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "provider.unroutable"
    assert "none polls the provider queue" in cause.message
    assert UNROUTABLE_AFTER_S <= took < UNROUTABLE_AFTER_S + 30
    history = await handle.fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    call = scheduled[0]
    assert call.schedule_to_start_timeout.ToTimedelta().total_seconds() == UNROUTABLE_AFTER_S
    assert [s.activity_type.name for s in scheduled] == [
        "call_model",
        "task_queue_polled",
        "write_run_files",  # the failed run's summary
    ]


@pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)
async def test_a_busy_routed_queue_is_waited_on_not_refused(
    client: Client, settings: Settings, worker_queue: str
) -> None:
    # One slot on the provider queue, held 40 s by a slow call: the second call cannot start
    # within UNROUTABLE_AFTER_S, yet a worker polls its queue, so it is scheduled again and runs.
    provider_queue = provider_task_queue(worker_queue, "sim")
    routed = CallOptions(provider_queues={"sim": provider_queue})
    async with httpx.AsyncClient() as http:
        serving = Worker(
            client,
            task_queue=provider_queue,
            activities=[ModelActivities(settings, http).call_model],
            max_concurrent_activities=1,
        )
        async with serving:
            slow = await client.start_workflow(
                ASK,
                AskInput(question="slow", model="sim:default,latency=fixed:40000", calls=routed),
                id=f"busy-slow-{uuid.uuid4().hex[:8]}",
                task_queue=worker_queue,
                result_type=AskResult,
            )
            await slow_call_started(slow)  # the slow call takes the one slot first
            waiting = await client.start_workflow(
                ASK,
                AskInput(question="waits", calls=routed),
                id=f"busy-wait-{uuid.uuid4().hex[:8]}",
                task_queue=worker_queue,
                result_type=AskResult,
            )
            results = await asyncio.wait_for(asyncio.gather(slow.result(), waiting.result()), 120)
    assert all(r.response.simulated for r in results)
    history = await waiting.fetch_history()
    names = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert names == ["call_model", "task_queue_polled", "call_model", "write_run_files"]
