"""A campaign started and extended with the plain ``temporal`` CLI: the document is the input."""

from __future__ import annotations

import json
import uuid

from temporalio.client import Client

from tests.campaigns.helpers import document
from tests.plans.test_run_control import temporal
from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN, SIGNAL_EXTEND_BUDGET


async def test_start_and_extend_with_the_temporal_cli(
    client: Client, server_address: str, worker_queue: str
) -> None:
    run_id = f"camp-cli-{uuid.uuid4().hex[:6]}"
    doc = document(seeds=[0], budget={"max_calls": 1})
    doc["variants"][1] = {"id": "other", "kind": "single", "config": {"model": "sim:default"}}
    code, out = await temporal(
        server_address, "workflow", "start", "--type", CAMPAIGN, "--task-queue", worker_queue,
        "--workflow-id", run_id, "--input", json.dumps(doc),
    )  # fmt: skip
    assert code == 0, out
    code, out = await temporal(
        server_address, "workflow", "signal", "--workflow-id", run_id,
        "--name", SIGNAL_EXTEND_BUDGET, "--input", json.dumps({"max_calls": 100}),
    )  # fmt: skip
    assert code == 0, out
    result = await client.get_workflow_handle(run_id, result_type=CampaignResult).result()
    assert result.status == "completed" and result.cells == 6 and result.spent.calls == 6
