"""Campaign documents for tests, and running one to its outcome."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowFailureError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN


def document(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "ponder-campaign/1",
        "campaign_id": "deep-vs-single",
        "commit_sha": "abc123",
        "variants": [
            {"id": "single", "kind": "single", "config": {"model": "sim:default"}},
            {
                "id": "deep",
                "kind": "tournament",
                # An accurate simulated judge: the tournament reliably keeps its best answer.
                "config": {"profile": "quick", "model": "sim:default,accuracy=0.95"},
            },
        ],
        "scenarios": [
            {"id": f"s{i}", "task": f"Task number {i}.", "scorer": {"kind": "sim_truth"}}
            for i in range(3)
        ],
        "seeds": [0, 1, 2],
        "comparator": "single",
        "min_pairs": 6,
    }
    doc.update(overrides)
    return doc


async def run_campaign(
    client: Client, queue: str, doc: dict[str, Any], run_id: str
) -> CampaignResult | ApplicationError:
    """The campaign's result, or the error it failed with."""
    handle = await client.start_workflow(
        CAMPAIGN,
        doc,
        id=run_id,
        task_queue=queue,
        result_type=CampaignResult,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
    )
    try:
        return await handle.result()
    except WorkflowFailureError as exc:
        assert isinstance(exc.cause, ApplicationError), exc.cause
        return exc.cause
