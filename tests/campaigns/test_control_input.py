"""Campaign control messages that do not decode, through the real ``temporal`` binary: each
signal is recorded as ``control.refused`` (never dropped with a log line), an update is refused
with ``input.invalid`` (never a Python ``TypeError``), and the campaign goes on."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.campaigns.test_control import progress_until, singles
from tests.campaigns.test_workflow import start
from tests.plans.test_run_control import temporal
from workflows.campaign.types import CampaignEvent
from workflows.names import QUERY_EVENTS, SIGNAL_EXTEND_BUDGET, UPDATE_EXTEND_BUDGET
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult


async def test_control_input_that_does_not_decode_is_refused_with_a_code(
    client: Client, server_address: str, worker_queue: str
) -> None:
    handle = await start(client, worker_queue, singles(budget={"max_calls": 2}, concurrency=1))
    await progress_until(handle, lambda p: p.status == "awaiting_budget" and p.cells_running == 0)
    signal = ["workflow", "signal", "--workflow-id", handle.id, "--name", SIGNAL_EXTEND_BUDGET]
    for inputs in ([], ["--input", '{"max_calls": "many"}'], ["--input", "{}", "--input", "{}"]):
        code, output = await temporal(server_address, *signal, *inputs)
        assert code == 0, output
    shown = await progress_until(handle, lambda p: len(p.refused) >= 3)
    assert "no input given" in shown.refused[0]
    assert "max_calls: Input should be a valid integer" in shown.refused[1]
    assert "2 inputs given" in shown.refused[2]
    update = ["workflow", "update", "execute", "--workflow-id", handle.id]
    for inputs in ([], ["--input", "{}", "--input", "{}"]):
        code, output = await temporal(
            server_address, *update, "--name", UPDATE_EXTEND_BUDGET, *inputs
        )
        assert code != 0 and "input.invalid" in output, output
        assert "TypeError" not in output, output
    done = await handle.execute_update(
        UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=100), result_type=ExtendBudgetResult
    )
    assert done.budget.max_calls == 100
    await handle.result()
    events = await handle.query(QUERY_EVENTS, 0, result_type=list[CampaignEvent])
    assert [e.type for e in events].count("control.refused") == 3
    history = await handle.fetch_history()
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in [e.event_type for e in history.events]
