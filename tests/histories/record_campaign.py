"""Record a Campaign history: run when the Campaign workflow changes on purpose.

.venv/bin/python -m tests.histories.record_campaign

Two single-shot cells spend the budget, the tournament cells wait ``awaiting_budget`` until an
``extend_budget`` update, then every cell settles and the report is written.
"""

from __future__ import annotations

import asyncio

from tests.campaigns.helpers import document
from tests.histories import recording, save
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import CAMPAIGN, QUERY_PROGRESS, UPDATE_EXTEND_BUDGET
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult


async def main() -> None:
    doc = document(seeds=[0, 1], concurrency=2, budget={"max_calls": 2})
    doc["scenarios"] = doc["scenarios"][:1]
    # The id is the file's stem: the replayer runs it under that id.
    async with recording(task_queue="campaign-history") as rec:
        handle = await rec.client.start_workflow(
            CAMPAIGN, doc, id="campaign", task_queue=rec.task_queue, result_type=CampaignResult
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
        await save(handle, "campaign.json")


if __name__ == "__main__":
    asyncio.run(main())
