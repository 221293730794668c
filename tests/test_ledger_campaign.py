"""A campaign's judge call on a spent shared ledger waits for it instead of failing, on the dev
server with a real worker and the real CLI: the campaign shows ``awaiting_budget`` naming the
ledger (``ponder status`` says what lets it go on), ``ponder ledger extend NAME`` resumes it, and
each of its calls is charged once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import CancelledError

from activities.config import Settings
from activities.ledger import draw_token
from activities.ledger_config import LedgerConfig
from client.campaign_display import progress_line, resume_command
from client.ledgers import ledger_view
from tests.campaigns.helpers import document
from tests.cli import cli_env, ponder
from tests.test_ledger_runs import until
from worker.worker import WorkerOptions, running_worker
from workflows.budget import BudgetLimits, BudgetSpent
from workflows.campaign.progress import CampaignProgress
from workflows.campaign.types import CampaignEvent, CampaignResult
from workflows.campaign.workflow import JUDGE_LEDGER_WAITS_PATCH
from workflows.ledger.types import LedgerView
from workflows.names import CAMPAIGN, QUERY_EVENTS, QUERY_PROGRESS

JUDGED = {"kind": "judge", "model": "sim:default", "rubric": "Is it a colour?"}


@pytest.fixture
def name() -> str:
    return f"t{uuid.uuid4().hex[:12]}"  # one entity per test: they share the dev server


@pytest.fixture
def ledger_settings(settings: Settings, name: str) -> Settings:
    # Room for the cell's one call, none for its judge's.
    config = LedgerConfig(calls=1, block=4, hold_ttl_s=5.0)
    return settings.model_copy(update={"ledgers": {name: config}})


@pytest.fixture
async def queue(client: Client, ledger_settings: Settings) -> AsyncIterator[str]:
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, ledger_settings, WorkerOptions(task_queue=queue)):
        yield queue


def judged_campaign(drain_timeout_s: float = 30.0, **calls: Any) -> dict[str, Any]:
    """One single-call cell scored by a judge."""
    return document(
        drain_timeout_s=drain_timeout_s,
        variants=[{"id": "single", "kind": "single", "config": {"model": "sim:default"}}],
        scenarios=[{"id": "s0", "task": "Name a colour.", "scorer": JUDGED}],
        seeds=[0],
        min_pairs=1,
        calls=calls,
    )


async def markers(client: Client, run_id: str) -> list[bytes]:
    handle = client.get_workflow_handle(run_id)
    return [
        e.SerializeToString()
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]


async def test_a_judge_call_on_a_spent_ledger_waits_and_extend_resumes_it(
    client: Client,
    ledger_settings: Settings,
    queue: str,
    name: str,
    server_address: str,
    tmp_path: Path,
) -> None:
    token = draw_token(ledger_settings, name)
    run_id = f"camp-{uuid.uuid4().hex[:12]}"
    handle = await client.start_workflow(
        CAMPAIGN,
        judged_campaign(ledger={"name": name, "token": token}),
        id=run_id,
        task_queue=queue,
        result_type=CampaignResult,
    )

    async def paused() -> CampaignProgress | None:
        progress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
        return progress if progress.status == "awaiting_budget" else None

    progress = await until(paused, "the campaign to wait on its ledger", timeout=30)
    assert progress.blocking_limit == f"ledger {name}: calls"
    assert progress.cells_running == 1  # its judge call waits; nothing failed
    view = await ledger_view(client, name)
    assert view is not None and view.waiting == [run_id] and view.calls == 1

    config = tmp_path / "client.toml"
    config.write_text(f"[ledgers.{name}]\ncalls = 1\n")
    env = cli_env(
        ledger_settings.home,
        TEMPORAL_ADDRESS=server_address,
        PONDER_TASK_QUEUE=queue,
        PONDER_CONFIG=str(config),
    )
    status = await ponder("status", run_id, env=env)
    assert status.code == 0, status.err
    shown = f"awaiting budget (ledger {name}: calls); continue with: ponder ledger extend {name}"
    assert shown in status.out, status.out
    extended = await ponder("ledger", "extend", name, "--calls", "+1", env=env)
    assert extended.code == 0, extended.err

    result = await handle.result()
    assert result.status == "completed" and result.cells == 1
    assert result.spent.calls == 2  # the cell's call and its judge's
    events = await handle.query(QUERY_EVENTS, 0, result_type=list[CampaignEvent])
    waits = [(e.type, e.data) for e in events if e.data.get("ledger") == name]
    assert waits == [
        ("campaign.awaiting_budget", {"ledger": name, "limit": "calls"}),
        ("campaign.resumed", {"ledger": name}),
    ]
    assert not any("judge call failed" in str(e.data) for e in events)
    assert any(JUDGE_LEDGER_WAITS_PATCH.encode() in m for m in await markers(client, run_id))

    async def settled() -> LedgerView | None:
        view = await ledger_view(client, name)
        return view if view is not None and view.holds == 0 else None

    final = await until(settled, "the campaign's blocks to be handed back")
    assert final.calls == 2 and final.waiting == []  # each call key charged once


async def test_a_campaign_cancelled_while_its_judge_waits_ends_at_once_with_the_cell_recorded(
    client: Client, ledger_settings: Settings, queue: str, name: str
) -> None:
    token = draw_token(ledger_settings, name)
    handle = await client.start_workflow(
        CAMPAIGN,
        # A judge call that kept waiting would hold the end for the whole drain bound.
        judged_campaign(drain_timeout_s=600, ledger={"name": name, "token": token}),
        id=f"camp-{uuid.uuid4().hex[:12]}",
        task_queue=queue,
        result_type=CampaignResult,
    )

    async def paused() -> bool:
        progress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
        return progress.blocking_limit == f"ledger {name}: calls"

    await until(paused, "the campaign to wait on its ledger", timeout=30)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), 30)  # not the drain bound's minutes
    assert isinstance(failed.value.cause, CancelledError)
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    events = await handle.query(QUERY_EVENTS, 0, result_type=list[CampaignEvent])
    kinds = [e.type for e in events]
    assert "cell.finished" in kinds and "cell.unsettled" not in kinds


async def test_a_campaign_without_a_ledger_records_no_judge_patch_marker(
    client: Client, queue: str
) -> None:
    """Campaigns without a ledger do what they always did: their histories are unchanged."""
    run_id = f"camp-{uuid.uuid4().hex[:12]}"
    handle = await client.start_workflow(
        CAMPAIGN, judged_campaign(), id=run_id, task_queue=queue, result_type=CampaignResult
    )
    assert (await handle.result()).status == "completed"
    assert not any(JUDGE_LEDGER_WAITS_PATCH.encode() in m for m in await markers(client, run_id))


def test_the_display_of_a_campaign_waiting_on_a_ledger_names_its_extend() -> None:
    waiting = CampaignProgress(
        run_id="camp-1",
        status="awaiting_budget",
        cells_total=4,
        cells_done=1,
        cells_running=1,
        cells_failed=0,
        budget=BudgetLimits(max_calls=10),
        spent=BudgetSpent(calls=3),
        blocking_limit="ledger team: usd",
    )
    assert progress_line(waiting).endswith(
        "; waiting for ledger team: usd: ponder ledger extend team"
    )
    assert resume_command("camp-1", waiting) == "ponder ledger extend team"
    # Its own budget: the campaign's extend, as before, and no ledger named.
    own = waiting.model_copy(update={"blocking_limit": "max_calls", "awaiting_cell_calls": 2})
    assert "ledger" not in progress_line(own)
    assert resume_command("camp-1", own) == "ponder extend camp-1 --calls +6"
