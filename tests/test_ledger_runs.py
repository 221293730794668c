"""Shared ledgers end to end, on the dev server with a real worker: runs drawing on one ledger
pause ``awaiting_budget`` naming it, ``ponder ledger extend`` resumes them all; draws are
idempotent by key; a hold nobody reports on (a killed worker's) expires and hands back its
calls; refusals of input (unknown ledger, wrong token, no token) make no call."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy

from activities.config import Endpoint, Settings
from activities.ledger import draw_token
from activities.ledger_config import LedgerConfig
from client.api import Ponder
from client.ledgers import extend_ledger, ledger_view
from tests.cli import cli_env, ponder
from tests.conftest import with_endpoint
from tests.fakes import FakeProvider, Reply
from tests.plans.run_helpers import agent, plan_doc
from tests.plans.run_helpers import events as plan_events
from tests.plans.run_helpers import start as plan_start
from tests.plans.run_helpers import status as plan_status
from tests.plans.run_helpers import wait_state as plan_wait_state
from tests.tournament.helpers import failure, start
from worker.worker import WorkerOptions, running_worker
from workflows.call_options import CallOptions
from workflows.ledger.types import (
    LEDGER_TOKEN_INVALID,
    LEDGER_TOKEN_REQUIRED,
    LEDGER_UNKNOWN,
    MESSAGES_PER_RUN,
    DrawInput,
    DrawResult,
    LedgerDraw,
    LedgerInput,
    LedgerLimits,
    LedgerView,
    ledger_workflow_id,
    token_digest,
)
from workflows.names import LEDGER, QUERY_PROGRESS, TOURNAMENT, UPDATE_LEDGER_DRAW
from workflows.tournament.types import Progress, TournamentResult

CALLS = 12
"""The ledger's calls: fewer than one quick tournament makes, so two runs both pause."""
LINEAR = plan_doc(
    agent("a", "Name a colour for ${input.topic}.", "teal"),
    agent("b", "Describe ${steps.a.output} in one line.", deps=["a"]),
    agent("c", "Check: ${steps.b.output}", "looks right", deps=["b"]),
)


def ledger_name() -> str:
    return f"t{uuid.uuid4().hex[:12]}"  # one entity per test: they share the dev server


@pytest.fixture
def name() -> str:
    return ledger_name()


@pytest.fixture
def ledger_settings(settings: Settings, name: str, fake: FakeProvider) -> Settings:
    settings = with_endpoint(
        settings, "local", Endpoint(kind="openai", base_url=fake.url, ponder_headers=True)
    )
    config = LedgerConfig(calls=CALLS, block=4, hold_ttl_s=5.0)
    return settings.model_copy(update={"ledgers": {name: config}})


@pytest.fixture
async def queue(client: Client, ledger_settings: Settings) -> AsyncIterator[str]:
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, ledger_settings, WorkerOptions(task_queue=queue)):
        yield queue


def calls_on(settings: Settings, name: str, token: str | None = None) -> CallOptions:
    token = token if token is not None else draw_token(settings, name)
    return CallOptions(ledger=LedgerDraw(name=name, token=token))


async def status(handle: WorkflowHandle) -> Progress:
    return await handle.query(QUERY_PROGRESS, result_type=Progress)


async def until(check: Any, what: str, timeout: float = 60) -> Any:
    """Poll ``check()`` (a query of live state) until it returns something truthy."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = await check()
        if found:
            return found
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_runs_sharing_a_ledger_pause_naming_it_and_extend_resumes_them_all(
    client: Client,
    ledger_settings: Settings,
    queue: str,
    name: str,
    fake: FakeProvider,
    server_address: str,
    tmp_path: Path,
) -> None:
    calls = calls_on(ledger_settings, name)
    first = await start(client, queue, calls=calls, seed=1, model="local:default")
    second = await start(client, queue, calls=calls, seed=2, model="local:default")

    async def both_paused() -> list[Progress] | None:
        found = [await status(first), await status(second)]
        return found if all(p.status == "awaiting_budget" for p in found) else None

    paused = await until(both_paused, "both runs to pause")
    for progress in paused:
        assert progress.blocking_limit == f"ledger {name}: calls"

    async def both_waiting() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and len(view.waiting) == 2 else None

    view = await until(both_waiting, "the ledger to list both runs")
    assert set(view.waiting) == {first.id, second.id}
    assert view.calls == CALLS and view.blocking == "calls"
    assert len(fake.seen) <= CALLS  # never past the ledger, whatever the runs' own budgets

    # The real CLI, as an operator runs it, on this test's server, queue and home.
    config = tmp_path / "client.toml"
    config.write_text(f"[ledgers.{name}]\ncalls = {CALLS}\n")
    env = cli_env(
        ledger_settings.home,
        TEMPORAL_ADDRESS=server_address,
        PONDER_TASK_QUEUE=queue,
        PONDER_CONFIG=str(config),
    )
    shown = await ponder("ledger", "show", name, env=env)
    assert shown.code == 0, shown.err
    assert f"calls    {CALLS} / {CALLS}" in shown.out and "2 run(s) waiting" in shown.out
    assert first.id in shown.out and second.id in shown.out
    extended = await ponder("ledger", "extend", name, "--calls", "+1000", env=env)
    assert extended.code == 0, extended.err
    assert f"calls    {CALLS} / {CALLS + 1000}" in extended.out
    results = [await first.result(), await second.result()]
    assert all(r.status == "completed" for r in results)

    async def settled() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and view.holds == 0 else None

    final = await until(settled, "the runs' blocks to be handed back")
    # Every call made counted once, the blocks' unused calls handed back.
    assert final.calls == len(fake.seen) == sum(r.spent.calls for r in results)
    assert final.waiting == []


async def test_extend_below_what_is_spent_is_refused(
    client: Client, ledger_settings: Settings, queue: str, name: str
) -> None:
    handle = await start(client, queue, calls=calls_on(ledger_settings, name))
    await until(lambda: _status_is(handle, "awaiting_budget"), "the run to pause on the ledger")
    with pytest.raises(Exception) as refused:
        await extend_ledger(client, ledger_settings, name, calls="3")
    assert getattr(refused.value, "code", None) == "ledger.extend_refused"
    assert "below what this period has spent" in str(refused.value)
    await handle.cancel()


async def _status_is(handle: WorkflowHandle, wanted: str) -> bool:
    return (await status(handle)).status == wanted


DIGEST = token_digest("0" * 32)


async def draw(
    client: Client,
    queue: str,
    name: str,
    key: str,
    calls: int,
    digest: str = DIGEST,
    messages_per_run: int = MESSAGES_PER_RUN,
    hold_ttl_s: float = 5.0,
) -> DrawResult:
    start_op: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        LEDGER,
        LedgerInput(
            name=name,
            limits=LedgerLimits(calls=CALLS),
            hold_ttl_s=hold_ttl_s,
            token_sha256=DIGEST,
            messages_per_run=messages_per_run,
        ),
        id=ledger_workflow_id(name),
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        task_queue=queue,
    )
    result: DrawResult = await client.execute_update_with_start_workflow(
        UPDATE_LEDGER_DRAW,
        DrawInput(token_sha256=digest, key=key, holder="run-x", calls=calls),
        start_workflow_operation=start_op,
        result_type=DrawResult,
    )
    return result


async def test_a_draw_is_idempotent_by_key_and_an_unreported_hold_expires(
    client: Client, queue: str, name: str
) -> None:
    assert (await draw(client, queue, name, "call-1", 5)).granted == 5
    assert (await draw(client, queue, name, "call-1", 5)).granted == 5  # the same hold
    view = await ledger_view(client, name)
    assert view is not None and (view.calls, view.holds, view.held_calls) == (5, 1, 5)
    # Nobody reports on it (its worker was killed): 5 s later it hands its calls back.

    async def expired() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and view.holds == 0 else None

    view = await until(expired, "the hold to expire", timeout=30)
    assert view.calls == 0
    assert (await draw(client, queue, name, "call-1", 5)).granted == 5  # closed: same answer
    assert (await ledger_view(client, name)).calls == 0  # type: ignore[union-attr]
    refused = await draw(client, queue, name, "call-2", 5, digest=token_digest("1" * 32))
    assert (refused.granted, refused.blocking) == (0, "token")  # not the ledger's token


async def test_a_retried_call_takes_nothing_more_from_its_block(
    client: Client, ledger_settings: Settings, queue: str, name: str, fake: FakeProvider
) -> None:
    # Nothing drew on it yet: extend starts it (on the settings' task queue) first.
    on_queue = ledger_settings.model_copy(update={"task_queue": queue})
    await extend_ledger(client, on_queue, name, calls="1000")
    # The first call's first attempt fails: Temporal runs it again, as the same call.
    fake.replies = [Reply(status=500, body={"error": {"message": "try again"}})]
    handle = await start(
        client, queue, calls=calls_on(ledger_settings, name), model="local:default"
    )
    result: TournamentResult = await handle.result()
    assert result.status == "completed"

    async def settled() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and view.holds == 0 else None

    view = await until(settled, "the run's blocks to be handed back")
    assert view.calls == result.spent.calls < len(fake.seen)


@pytest.mark.parametrize(
    ("which", "code"),
    [("unknown", LEDGER_UNKNOWN), ("token", LEDGER_TOKEN_INVALID)],
)
async def test_a_ledger_the_worker_does_not_give_makes_no_call(
    client: Client,
    ledger_settings: Settings,
    queue: str,
    name: str,
    fake: FakeProvider,
    which: str,
    code: str,
) -> None:
    if which == "unknown":
        calls = calls_on(ledger_settings, ledger_name(), token="0" * 32)
    else:
        draw_token(ledger_settings, name)
        calls = calls_on(ledger_settings, name, token="f" * 32)
    cause = await failure(client, queue, calls=calls, model="local:default")
    assert cause.type == code
    assert "calls.ledger" in cause.message
    assert fake.seen == []


async def test_input_naming_a_ledger_without_its_token_fails_at_decode(
    client: Client, queue: str, name: str
) -> None:
    handle = await client.start_workflow(
        TOURNAMENT,
        {"task": "Sort a list.", "calls": {"ledger": {"name": name}}},
        id=f"t-{uuid.uuid4().hex[:10]}",
        task_queue=queue,
    )
    with pytest.raises(Exception) as failed:
        await handle.result()
    cause = failed.value.cause  # type: ignore[attr-defined]
    assert cause.type == LEDGER_TOKEN_REQUIRED
    assert "draw token" in cause.message


async def test_a_plan_run_waits_on_its_ledger_and_goes_on_when_extended(
    client: Client, ledger_settings: Settings, queue: str, name: str
) -> None:
    on_queue = ledger_settings.model_copy(update={"task_queue": queue})
    await extend_ledger(client, on_queue, name, calls="2")  # room for the first two steps
    handle = await plan_start(
        client, queue, LINEAR, args={"topic": "x"}, calls=calls_on(ledger_settings, name)
    )
    paused = await plan_wait_state(handle, "awaiting_budget")
    assert paused.reason == "budget-exhausted"
    budget = (await plan_status(handle)).budget
    assert budget is not None and budget.need == f"ledger {name}: calls limit of its period reached"
    await extend_ledger(client, on_queue, name, calls="+10")
    result = await handle.result()
    assert result.calls == 3 and result.outputs["c"] == "looks right"
    kinds = [e.type for e in await plan_events(handle)]
    assert "ledger.waiting" in kinds and "ledger.resumed" in kinds

    async def settled() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and view.holds == 0 else None

    assert (await until(settled, "the plan's blocks to be handed back")).calls == 3


async def test_the_python_client_draws_on_the_ledger_it_connects_with(
    client: Client,
    ledger_settings: Settings,
    queue: str,
    name: str,
    server_address: str,
    tmp_path: Path,
) -> None:
    config = tmp_path / "client.toml"
    config.write_text(f"[ledgers.{name}]\ncalls = {CALLS}\n")
    async with Ponder.connect(
        address=server_address,
        home=ledger_settings.home,
        task_queue=queue,
        config=config,
        ledger=name,
    ) as ponder:
        run = await ponder.tournament("Sort a list.", seed=3)
        handle = client.get_workflow_handle(run.id)
        await until(lambda: _status_is(handle, "awaiting_budget"), "the run to pause on the ledger")
        view = await ledger_view(client, name)
        assert view is not None and view.waiting == [run.id]
        await handle.cancel()


async def test_the_ledger_continues_as_new_carrying_its_book(
    client: Client, queue: str, name: str
) -> None:
    handle = client.get_workflow_handle(ledger_workflow_id(name))
    first_run = None
    for i in range(7):  # 3 updates a run: two continue-as-new
        drawn = await draw(client, queue, name, f"k{i}", 1, messages_per_run=3, hold_ttl_s=600)
        assert drawn.granted == 1
        first_run = first_run or (await handle.describe()).run_id
    # Draws of earlier runs are still known by key (idempotent), and nothing was lost.
    assert (await draw(client, queue, name, "k0", 1, messages_per_run=3)).granted == 1
    view = await ledger_view(client, name)
    assert view is not None and (view.calls, view.holds, view.draws) == (7, 7, 8)
    assert (await handle.describe()).run_id != first_run
    first = client.get_workflow_handle(ledger_workflow_id(name), run_id=first_run)
    kinds = [e.event_type for e in (await first.fetch_history()).events]
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW in kinds
    await handle.terminate("test over")
