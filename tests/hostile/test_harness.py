"""The harness itself: a quiet worker answers the probe and stops on SIGTERM, and a worker that
cannot answer fails the probe (so a frozen worker cannot pass a hostile test)."""

from __future__ import annotations

import os
import signal

import pytest
from temporalio.client import Client

from activities.config import Settings
from tests.hostile.harness import shared_worker


async def test_a_quiet_worker_answers_the_probe_and_stops(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        assert await worker.probe() < 10


async def test_a_stopped_worker_fails_the_probe(
    client: Client, settings: Settings, server_address: str
) -> None:
    async with shared_worker(client, settings, server_address) as worker:
        os.kill(worker.process.pid, signal.SIGSTOP)  # frozen, as a worker stuck in C code is
        try:
            with pytest.raises(AssertionError, match="did not finish within 2 s"):
                await worker.probe(within=2)
        finally:
            os.kill(worker.process.pid, signal.SIGCONT)
