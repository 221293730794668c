"""``--rate-limit``: a provider's calls go to its own task queue, served at most N per second.

The routing is the run's, not the worker's: the client that starts a run sees the provider queue
polled and records it in the input, so the run's history says where its calls go.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from client.call_routes import RouteLookups, model_specs, route_calls
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.call_options import CallOptions, provider_task_queue
from workflows.names import ASK
from workflows.plan.run_types import PlanRunInput
from workflows.tournament.types import RoleModels, TournamentInput


async def test_rate_limited_provider_has_its_own_queue(client: Client, settings: Settings) -> None:
    queue = f"test-{uuid.uuid4()}"
    options = WorkerOptions(task_queue=queue, rate_limits={"sim": 2.0})
    async with running_worker(client, settings, options):
        # Until the provider queue's first poll reaches the server: a deadline, not 50 tries
        # (about 10 s), which a loaded machine could use up, routing every run unthrottled.
        deadline = time.monotonic() + 60
        while not (await route_calls(client, queue, AskInput(question="q"))).calls.provider_queues:
            assert time.monotonic() < deadline, "the provider queue's poller never showed"
            await asyncio.sleep(0.2)
        inputs = [await route_calls(client, queue, AskInput(question=f"q{i}")) for i in range(6)]
        # A document sent as JSON (a campaign) is routed the same way.
        document = await route_calls(
            client, queue, {"variants": [{"config": {"model": "sim:default"}}], "calls": {}}
        )
        started = time.monotonic()
        handles = [
            await client.start_workflow(
                ASK, payload, id=f"rl-{uuid.uuid4()}", task_queue=queue, result_type=AskResult
            )
            for payload in inputs
        ]
        await asyncio.gather(*(h.result() for h in handles))
        elapsed = time.monotonic() - started
    assert inputs[0].calls.provider_queues == {"sim": provider_task_queue(queue, "sim")}
    assert document["calls"]["provider_queues"] == inputs[0].calls.provider_queues
    assert elapsed >= 2.0  # 6 calls at 2 per second cannot all finish in under ~2.5 s
    history = await handles[0].fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled[0].activity_type.name == "call_model"
    assert scheduled[0].task_queue.name == provider_task_queue(queue, "sim")


async def test_no_rate_limited_worker_no_route(client: Client, settings: Settings) -> None:
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        routed = await route_calls(client, queue, AskInput(question="q"))
    assert routed.calls.provider_queues == {}


async def test_runs_started_in_a_burst_ask_once_per_provider_queue(
    client: Client, settings: Settings
) -> None:
    """A session's starts reuse what it last saw of a queue (one RPC per start, not two)."""
    queue = f"test-{uuid.uuid4()}"
    lookups = RouteLookups(fresh_s=3600.0)
    assert (
        await route_calls(client, queue, AskInput(question="q"), lookups)
    ).calls == CallOptions()
    options = WorkerOptions(task_queue=queue, rate_limits={"sim": 2.0})
    async with running_worker(client, settings, options):
        deadline = time.monotonic() + 60
        while not (await route_calls(client, queue, AskInput(question="q"))).calls.provider_queues:
            assert time.monotonic() < deadline, "the provider queue's poller never showed"
            await asyncio.sleep(0.2)
        cached = await route_calls(client, queue, AskInput(question="q"), lookups)
        lookups.fresh_s = 0.0  # what it saw is stale now: asked again
        asked = await route_calls(client, queue, AskInput(question="q"), lookups)
    assert cached.calls.provider_queues == {}
    assert asked.calls.provider_queues == {"sim": provider_task_queue(queue, "sim")}


def test_every_run_kind_names_the_models_it_may_call() -> None:
    assert model_specs(AskInput(question="q", model="a:x")) == ["a:x"]
    tournament = TournamentInput(task="t", model="a:x", models=RoleModels(judge="b:y"))
    assert model_specs(tournament) == ["a:x", "b:y"]
    plan = PlanRunInput(
        plan={"steps": [{"id": "s1", "model": "c:z"}, {"id": "s2", "model": "sonnet"}]},
        executors={"claude": "d:w"},
    )
    assert model_specs(plan) == ["d:w", "c:z"]  # a bare family name is routed by executors
    campaign = {
        "variants": [
            {"kind": "single", "config": {"model": "e:v"}},
            {"kind": "tournament", "config": {"model": "e:v", "models": {"judge": "f:u"}}},
        ],
        "scenarios": [{"scorer": {"kind": "judge", "model": "g:t"}}],
    }
    assert model_specs(campaign) == ["e:v", "f:u", "g:t"]
