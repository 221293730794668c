"""Crash recovery, not vacuous: SIGKILL the worker while the fake holds calls open, three times."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Final

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Settings
from client.connect import connect
from client.embedded import EmbeddedServer
from tests.fakes import FakeProvider
from tests.tournament.helpers import fingerprint, run
from tests.worker_process import KilledWorker, declare_fake, start_worker
from worker.worker import WorkerOptions, running_worker
from workflows.call_options import CallOptions
from workflows.names import TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult

pytestmark = pytest.mark.slow  # started first: see tests/conftest.py

KILL_PHASES = ["initial_generation", "generation_judging:2", "generation_mutation:3"]


KILL_ROUNDS: Final = "barrier"
"""The kills wait for a phase's whole first batch, which a barrier round sends at once; in
pipelined rounds a phase's calls start as their candidates appear, so no batch is whole."""
FIRST_BATCH = 8
"""A phase's calls in flight at once (the default concurrency); every phase killed in here has
more calls than that, so its whole first batch reaches the fake and is held there."""


async def wait_for_phase(fake: FakeProvider, phase: str, timeout: float = 60) -> None:
    """Until the phase's whole first batch has arrived (and is held), so the test's snapshot of
    what was in flight is complete: after a fixed 0.3 s, a loaded machine could still have some
    of the batch on its way, held later yet missing from the snapshot, and then repeated."""
    deadline = time.monotonic() + timeout
    while sum(seen.phase == phase for seen in fake.seen) < FIRST_BATCH:
        arrived = sum(seen.phase == phase for seen in fake.seen)
        assert time.monotonic() < deadline, f"{arrived} of {phase}'s first {FIRST_BATCH} arrived"
        await asyncio.sleep(0.05)


async def test_killed_worker_resumes_without_repeating_completed_calls(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    local = declare_fake(settings, fake.url)
    reference_queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, local, WorkerOptions(task_queue=reference_queue)):
        reference = await run(
            client,
            reference_queue,
            profile="paper",
            seed=21,
            model="local:default",
            rounds=KILL_ROUNDS,
        )
    fake.seen.clear()

    queue = f"test-{uuid.uuid4()}"
    in_flight_at_kills: set[str] = set()
    async with KilledWorker(settings, server_address, queue) as worker:
        handle = await client.start_workflow(
            TOURNAMENT,
            TournamentInput(
                task="Sort a list in place.",
                profile="paper",
                seed=21,
                model="local:default",
                rounds=KILL_ROUNDS,
                calls=CallOptions(heartbeat_timeout_s=2),
            ),
            id=f"crash-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=TournamentResult,
            task_timeout=timedelta(seconds=2),
        )
        try:
            for phase in KILL_PHASES:
                fake.hold_when = lambda seen, phase=phase: seen.phase == phase
                await wait_for_phase(fake, phase)
                await worker.kill()
                # Everything of this phase that reached the fake is still held, so in flight.
                held = {s.call_id for s in fake.seen if s.phase == phase}
                in_flight_at_kills |= held
                await worker.restart()
                fake.resume()
                assert held
            result = await asyncio.wait_for(handle.result(), 240)
        finally:
            fake.resume()  # before the worker stops: a held call would keep it waiting

    assert result.winner_id == reference.winner_id
    assert fingerprint(Path(result.run_dir)) == fingerprint(Path(reference.run_dir))

    repeated = {call for call, n in Counter(s.call_id for s in fake.seen).items() if n > 1}
    assert repeated, "no call was retried after a kill: the test did not exercise recovery"
    assert repeated <= in_flight_at_kills  # only calls in flight at a kill ran twice
    assert result.spent.calls == 285  # and each logical call was billed once

    history = await handle.fetch_history()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert max(attempts) > 1


async def test_killed_server_mid_tournament_restarts_and_repeats_only_calls_in_flight(
    settings: Settings, fake: FakeProvider, no_leftover_processes: None
) -> None:
    """``kill -9`` the embedded server (SQLite under a temp $PONDER_HOME) while a judging batch
    is held open at the fake: the lease's watchdog brings it back on the same port, the worker
    and the run carry on, and no call that had answered before the kill is made again."""
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\nponder_headers = true\n'
    )
    server = EmbeddedServer(settings.home)
    queue = f"test-{uuid.uuid4()}"
    phase = "generation_judging:1"
    async with server.lease() as info:
        client = await connect(settings, info.address)
        worker = await start_worker(settings, info.address, queue)
        try:
            fake.hold_when = lambda seen: seen.phase == phase
            handle = await client.start_workflow(
                TOURNAMENT,
                TournamentInput(
                    task="Sort a list in place.", profile="balanced", seed=5, model="local:default"
                ),
                id=f"restart-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
                result_type=TournamentResult,
            )
            await wait_for_phase(fake, phase)
            answered = {s.call_id for s in fake.seen if s.phase != phase}
            in_flight = {s.call_id for s in fake.seen if s.phase == phase}
            os.kill(info.pid, signal.SIGKILL)
            fake.resume()  # the held calls answer while the server is down
            deadline = time.monotonic() + 60
            while (now := server.read_state()) is None or now.pid == info.pid:
                assert time.monotonic() < deadline, "the watchdog did not restart the server"
                await asyncio.sleep(0.1)
            assert now.grpc_port == info.grpc_port
            client = await connect(settings, info.address)
            result = await asyncio.wait_for(
                client.get_workflow_handle(handle.id, result_type=TournamentResult).result(), 120
            )
            # The same tournament without a kill (the fake wraps the sim, so same outputs).
            reference = await run(client, queue, profile="balanced", seed=5, model="sim:default")
        finally:
            fake.resume()
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
                await worker.wait()

    assert result.status == "completed"
    counts = Counter(s.call_id for s in fake.seen)
    repeated = {call for call, n in counts.items() if n > 1}
    assert answered and len(in_flight) == FIRST_BATCH
    assert repeated <= in_flight  # only calls in flight at the kill ran again
    assert len(counts) == 60  # every logical call reached the provider
    assert result.spent.calls == 60  # and each logical call was billed once
    assert fingerprint(Path(result.run_dir)) == fingerprint(Path(reference.run_dir))
