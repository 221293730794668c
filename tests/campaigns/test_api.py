"""Campaigns from the Python client (``client/api.py``): start, events, pause, extend, decision."""

from __future__ import annotations

import pytest

from activities.config import Settings
from client.api import CampaignRun, Ponder
from tests.campaigns.helpers import document
from workflows.campaign.errors import CampaignInvalid


async def test_a_campaign_from_the_python_client(
    settings: Settings, server_address: str, worker_queue: str
) -> None:
    doc = document(seeds=[0], budget={"max_calls": 2})
    doc["variants"][1] = {"id": "other", "kind": "single", "config": {"model": "sim:default"}}
    async with Ponder.connect(
        address=server_address, home=settings.home, task_queue=worker_queue
    ) as ponder:
        with pytest.raises(CampaignInvalid, match=r"\[comparator.unknown\]") as refused:
            await ponder.campaign({**doc, "comparator": "ghost"})
        assert refused.value.code == "comparator.unknown"
        run = await ponder.campaign(doc, run_id="camp-api-1")
        seen = [event.type async for event in run.events()]  # until it pauses on its budget
        assert seen[0] == "campaign.started" and seen[-1] == "campaign.awaiting_budget"
        same = await ponder.attach("camp-api-1")
        assert isinstance(same, CampaignRun)
        paused = await same.progress()
        assert (paused.status, paused.cells_done, paused.blocking_limit) == (
            "awaiting_budget",
            2,
            "max_calls",
        )
        extended = await same.extend(max_calls=6)
        assert extended.budget.max_calls == 6
        result = await same.result()
    assert result.cells == 6 and set(result.decisions) == {"other"}
    assert doc["comparator"] == "single"  # the caller's document is left as it was
