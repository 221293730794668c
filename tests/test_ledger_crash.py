"""Calls their first worker was killed making, retried on another worker process, are charged to
the shared ledger once each: two real worker processes, one SIGKILLed while the calls are in
flight and after it reported them to the ledger."""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import Client

from activities.config import Settings
from activities.ledger import draw_token
from client.ledgers import ledger_view
from tests.fakes import FakeProvider
from tests.test_ledger_runs import until
from tests.worker_process import declare_fake, start_worker
from workflows.ask_types import AskInput, AskResult
from workflows.call_options import CallOptions
from workflows.ledger.types import LedgerDraw, LedgerView
from workflows.names import ASK

pytestmark = pytest.mark.slow


ASKS = 3


async def test_calls_retried_on_another_worker_are_charged_once(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    name = f"t{uuid.uuid4().hex[:12]}"
    declare_fake(settings, fake.url)
    with (settings.home / "ponder.toml").open("a") as toml:
        toml.write(f"[ledgers.{name}]\ncalls = 100\nblock = 4\nhold_ttl_s = 5\n")
    token = draw_token(settings, name)
    queue = f"test-{uuid.uuid4()}"
    fake.hold()  # the first attempts stay in flight until their worker is killed
    first = await start_worker(settings, server_address, queue)
    second = None
    try:
        handles = [
            await client.start_workflow(
                ASK,
                AskInput(
                    question=f"Why {i}?",
                    model="local:default",
                    # A killed worker's call is retried elsewhere two seconds on.
                    calls=CallOptions(
                        ledger=LedgerDraw(name=name, token=token), heartbeat_timeout_s=2
                    ),
                ),
                id=f"ask-{uuid.uuid4().hex[:12]}",
                task_queue=queue,
                result_type=AskResult,
            )
            for i in range(ASKS)
        ]

        async def reported() -> LedgerView | None:
            view = await ledger_view(client, name)
            if view is None or len(fake.seen) < ASKS:
                return None
            return view if view.calls - view.held_calls == ASKS else None  # reported made

        # The killed worker told the ledger of every call it made: the ledger counts them there.
        await until(reported, "the first worker to report its calls", timeout=30)
        second = await start_worker(settings, server_address, queue)
        first.kill()
        await first.wait()
        fake.resume()
        for handle in handles:
            assert (await handle.result()).response.text

        async def settled() -> LedgerView | None:
            view = await ledger_view(client, name)
            return view if view is not None and view.holds == 0 else None

        # The killed worker's holds expire, the other's blocks are handed back once idle.
        view = await until(settled, "both holds to close", timeout=60)
    finally:
        for process in (first, second):
            if process is not None and process.returncode is None:
                process.terminate()
                await process.wait()
    assert len(fake.seen) == 2 * ASKS  # each call made twice: the killed attempt and its retry
    assert view.calls == ASKS  # and charged once
