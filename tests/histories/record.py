"""Record the histories the replay test replays: run when workflow code changes on purpose.

.venv/bin/python -m tests.histories.record
"""

import asyncio
import contextlib
import tempfile
import uuid
from pathlib import Path

from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from activities.config import load_settings
from client.connect import connect
from client.embedded import find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.budget import BudgetLimits
from workflows.names import QUERY_PROGRESS, UPDATE_EXTEND_BUDGET
from workflows.tournament.types import (
    ExtendBudgetInput,
    ExtendBudgetResult,
    Progress,
    TournamentInput,
    TournamentResult,
)

OUT = Path(__file__).parent


async def main():
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=find_temporal_binary(), ui=False, dev_server_log_level="error"
    )
    settings = load_settings(home=tempfile.mkdtemp())
    client = await connect(settings, env.client.service_client.config.target_host)
    q = str(uuid.uuid4())
    async with running_worker(client, settings, WorkerOptions(task_queue=q)):
        h = await client.start_workflow(
            "Ask",
            AskInput(question="What is durable execution?"),
            id="ask-history",
            task_queue=q,
            result_type=AskResult,
        )
        await h.result()
        (OUT / "ask.json").write_text((await h.fetch_history()).to_json())
        h = await client.start_workflow(
            "Tournament",
            TournamentInput(task="Sort a list.", profile="quick", seed=1),
            id="quick-history",
            task_queue=q,
            result_type=TournamentResult,
        )
        await h.result()
        (OUT / "tournament-quick.json").write_text((await h.fetch_history()).to_json())
        h = await client.start_workflow(
            "Tournament",
            TournamentInput(
                task="Sort a list.",
                profile="balanced",
                seed=4,
                schedule="adaptive",
                model="sim:default,invalid_json_rate=0.25",
                invalid_json_retries=3,
                budget=BudgetLimits(max_calls=60),
            ),
            id="paused-history",
            task_queue=q,
            result_type=TournamentResult,
        )
        while (await h.query(QUERY_PROGRESS, result_type=Progress)).status != "awaiting_budget":
            await asyncio.sleep(0.1)
        await h.execute_update(
            UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=200), result_type=ExtendBudgetResult
        )
        await h.result()
        (OUT / "tournament-paused-adaptive.json").write_text((await h.fetch_history()).to_json())
        await record_refused_input(client, q)
    await env.shutdown()
    for p in OUT.glob("*.json"):
        print(p.name, p.stat().st_size)


async def record_refused_input(client, q):
    """A Tournament whose raw input does not decode (``input.invalid``) replays as well."""
    h = await client.start_workflow(
        "Tournament", {"task": "Sort a list.", "bogus_field": 1}, id="refused-history", task_queue=q
    )
    with contextlib.suppress(WorkflowFailureError):
        await h.result()
    (OUT / "tournament-input-invalid.json").write_text((await h.fetch_history()).to_json())


if __name__ == "__main__":
    asyncio.run(main())
