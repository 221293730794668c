"""Record a Campaign history: run when the Campaign workflow changes on purpose.

.venv/bin/python -m tests.histories.record_campaign

Two single-shot cells spend the budget, the tournament cells wait ``awaiting_budget`` until an
``extend_budget`` update, then every cell settles and the report is written.
"""

from __future__ import annotations

import asyncio
import tempfile

from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from tests.campaigns.helpers import document
from tests.histories.record import OUT
from worker.worker import WorkerOptions, running_worker
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import CAMPAIGN, QUERY_PROGRESS, UPDATE_EXTEND_BUDGET
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    settings = load_settings(home=tempfile.mkdtemp())
    client = await connect(settings, env.client.service_client.config.target_host)
    queue = "campaign-history"  # the id is the file's stem: the replayer runs it under that id
    doc = document(seeds=[0, 1], concurrency=2, budget={"max_calls": 2})
    doc["scenarios"] = doc["scenarios"][:1]
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        handle = await client.start_workflow(
            CAMPAIGN, doc, id="campaign", task_queue=queue, result_type=CampaignResult
        )
        while True:
            progress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
            if progress.status == "awaiting_budget":
                break
            await asyncio.sleep(0.1)
        await handle.execute_update(
            UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=500), result_type=ExtendBudgetResult
        )
        await handle.result()
        (OUT / "campaign.json").write_text((await handle.fetch_history()).to_json())
    await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
