"""Record the histories the replay test replays: run when workflow code changes on purpose.

.venv/bin/python -m tests.histories.record
"""

import asyncio
import contextlib

from temporalio.client import Client, WorkflowFailureError

from tests.histories import out_dir, recording, save
from workflows.ask_types import AskInput, AskResult
from workflows.budget import BudgetLimits
from workflows.names import QUERY_PROGRESS, UPDATE_EXTEND_BUDGET
from workflows.tournament.progress import ENDED
from workflows.tournament.types import (
    ExtendBudgetInput,
    ExtendBudgetResult,
    Progress,
    TournamentInput,
    TournamentResult,
)


async def main() -> None:
    async with recording() as rec:
        client, q = rec.client, rec.task_queue
        h = await client.start_workflow(
            "Ask",
            AskInput(question="What is durable execution?"),
            id="ask-history",
            task_queue=q,
            result_type=AskResult,
        )
        await h.result()
        await save(h, "ask.json")
        h = await client.start_workflow(
            "Tournament",
            TournamentInput(task="Sort a list.", profile="quick", seed=1),
            id="quick-history",
            task_queue=q,
            result_type=TournamentResult,
        )
        await h.result()
        await save(h, "tournament-quick.json")
        h = await client.start_workflow(
            "Tournament",
            TournamentInput(
                task="Sort a list.",
                profile="balanced",
                seed=4,
                schedule="adaptive",
                model="sim:default,invalid_json_rate=0.25",
                invalid_json_retries=3,
                # One call over the 44 planned: the invalid-JSON retries run it out, so it pauses.
                budget=BudgetLimits(max_calls=45),
            ),
            id="paused-history",
            task_queue=q,
            result_type=TournamentResult,
        )
        while (status := (await h.query(QUERY_PROGRESS, result_type=Progress)).status) != (
            "awaiting_budget"
        ):
            if status in ENDED:
                raise RuntimeError(f"the run ended {status} before it was awaiting_budget")
            await asyncio.sleep(0.1)
        await h.execute_update(
            UPDATE_EXTEND_BUDGET, ExtendBudgetInput(max_calls=200), result_type=ExtendBudgetResult
        )
        await h.result()
        await save(h, "tournament-paused-adaptive.json")
        await record_refused_input(client, q)
    for p in sorted(out_dir().glob("*.json")):
        print(p.name, p.stat().st_size)


async def record_refused_input(client: Client, q: str) -> None:
    """A Tournament whose raw input does not decode (``input.invalid``) replays as well."""
    h = await client.start_workflow(
        "Tournament", {"task": "Sort a list.", "bogus_field": 1}, id="refused-history", task_queue=q
    )
    with contextlib.suppress(WorkflowFailureError):
        await h.result()
    await save(h, "tournament-input-invalid.json")


if __name__ == "__main__":
    asyncio.run(main())
