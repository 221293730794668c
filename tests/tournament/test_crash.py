"""Crash recovery, not vacuous: SIGKILL the worker while the fake holds calls open, three times."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.config import Endpoint, Settings
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider
from tests.tournament.helpers import fingerprint, run
from worker.worker import WorkerOptions, running_worker
from workflows.names import TOURNAMENT
from workflows.tournament.types import TournamentInput, TournamentResult

KILL_PHASES = ["initial_generation", "generation_judging:2", "generation_mutation:3"]


async def start_worker(settings: Settings, address: str, queue: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env |= {
        "TEMPORAL_ADDRESS": address,
        "PONDER_HOME": str(settings.home),
        "PONDER_RUNS_DIR": str(settings.runs_dir),
        "PONDER_PAYLOAD_DIR": str(settings.payload_dir),
        "PONDER_CONFIG": str(settings.home / "ponder.toml"),
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker",
        "--task-queue",
        queue,
        "--heartbeat-timeout",
        "2",
        "--sticky-timeout",
        "1",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def wait_for_phase(fake: FakeProvider, phase: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(seen.phase == phase for seen in fake.seen):
        assert time.monotonic() < deadline, f"no call of {phase} arrived"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # the rest of the phase's first batch


async def test_killed_worker_resumes_without_repeating_completed_calls(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.url}"\nponder_headers = true\n'
    )
    local = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    )
    reference_queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, local, WorkerOptions(task_queue=reference_queue)):
        reference = await run(
            client, reference_queue, profile="paper", seed=21, model="local:default"
        )
    fake.seen.clear()

    queue = f"test-{uuid.uuid4()}"
    worker = await start_worker(settings, server_address, queue)
    handle = await client.start_workflow(
        TOURNAMENT,
        TournamentInput(
            task="Sort a list in place.", profile="paper", seed=21, model="local:default"
        ),
        id=f"crash-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=TournamentResult,
        task_timeout=timedelta(seconds=2),
    )
    in_flight_at_kills: set[str] = set()
    try:
        for phase in KILL_PHASES:
            fake.hold_when = lambda seen, phase=phase: seen.phase == phase
            await wait_for_phase(fake, phase)
            worker.send_signal(signal.SIGKILL)
            await worker.wait()
            # Everything of this phase that reached the fake is still held, so in flight.
            held = {s.call_id for s in fake.seen if s.phase == phase}
            in_flight_at_kills |= held
            worker = await start_worker(settings, server_address, queue)
            fake.resume()
            assert held
        result = await asyncio.wait_for(handle.result(), 240)
    finally:
        fake.resume()
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
            await worker.wait()

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
