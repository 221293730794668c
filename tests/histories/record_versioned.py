"""Record the histories of runs on a versioned worker that the replay test replays against the
classes a versioned worker registers (``workflows.versioned``): run when those change on purpose.

.venv/bin/python -m tests.histories.record_versioned

Both on a dev server of their own, served by ``ponder worker --deployment``'s in-process
equivalent, build ``rec-a`` made current first:

- ``versioned-ask.json``: an Ask, PINNED to ``rec-a``, to its answer.
- ``versioned-plan-gate.json``: a plan run (AUTO_UPGRADE) that makes a call, waits at a human
  gate, moves to build ``rec-b`` once that is promoted while it waits, and is approved and
  finishes there: what a rollout does to a long run.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from temporalio.api.enums.v1 import RoutingConfigUpdateState
from temporalio.client import Client

from activities.config import load_settings
from tests.histories import recording, save, wait_for_state
from worker.deployment import (
    PROMOTE_REFUSED,
    DeployError,
    describe_deployment,
    promote,
    take_first_version,
)
from worker.worker import WorkerOptions, running_worker
from workflows.ask_types import AskInput, AskResult
from workflows.names import ASK, PLAN_RUN, SIGNAL_RESOLVE_GATE
from workflows.plan.run_types import PlanRunInput, PlanRunResult, ResolveGateInput

DEPLOYMENT = "ponder-recorded"
PLAN: dict[str, Any] = {
    "schema": "ponder-plan/1",
    "name": "versioned-gate",
    "steps": [
        {"id": "draft", "kind": "agent", "model": "sim:default", "prompt": "Draft a haiku."},
        {"id": "ship", "kind": "gate", "deps": ["draft"], "gate": {}},
        {"id": "polish", "kind": "agent", "deps": ["ship"], "model": "sim:default",
         "prompt": "Polish: ${steps.draft.output}"},
    ],
}  # fmt: skip


async def promoted(client: Client, build_id: str) -> tuple[str, str | None]:
    """``promote``, asked again while the server has not yet seen the version poll every task
    queue (its worker's first polls lag its listing)."""
    for _ in range(60):
        try:
            answer = await promote(client, DEPLOYMENT, build_id)
            break
        except DeployError as exc:
            if exc.code != PROMOTE_REFUSED:
                raise
        await asyncio.sleep(0.5)
    else:
        answer = await promote(client, DEPLOYMENT, build_id)
    # The new routing reaches the task queue a moment later: until then the old build would
    # take the plan's next task.
    completed = RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED
    for _ in range(60):
        described = await describe_deployment(client, DEPLOYMENT)
        if described is not None and described[0].routing_config_update_state == completed:
            break
        await asyncio.sleep(0.5)
    return answer


async def main() -> None:
    settings = load_settings(home=tempfile.mkdtemp())
    async with recording(settings, deployment=DEPLOYMENT, build_id="rec-a") as rec:
        said = await take_first_version(rec.client, DEPLOYMENT, "rec-a")
        assert "'rec-a' is current" in said, said
        ask = await rec.client.start_workflow(
            ASK,
            AskInput(question="Why is the sky blue?", model="sim:default"),
            id="ask-versioned-history",
            task_queue=rec.task_queue,
            result_type=AskResult,
        )
        await ask.result()
        await save(ask, "versioned-ask.json")

        plan = await rec.client.start_workflow(
            PLAN_RUN,
            PlanRunInput(plan=PLAN),
            id="plan-versioned-history",
            task_queue=rec.task_queue,
            result_type=PlanRunResult,
        )
        gate = await wait_for_state(plan, "awaiting_gate")
        upgraded = WorkerOptions(task_queue=rec.task_queue, deployment=DEPLOYMENT, build_id="rec-b")
        async with running_worker(rec.client, settings, upgraded):
            said = await take_first_version(rec.client, DEPLOYMENT, "rec-b")  # listed, waits
            assert "'rec-b' waits" in said, said
            assert await promoted(rec.client, "rec-b") == ("rec-b", "rec-a")
            token = gate.pending_gates[0].token
            await plan.signal(
                SIGNAL_RESOLVE_GATE, ResolveGateInput(step="ship", decision="approve", token=token)
            )
            await plan.result()
        # Saved only if it is what it stands for: the gate's wait on rec-a, the rest on rec-b.
        history = await plan.fetch_history()
        builds = [
            event.workflow_task_completed_event_attributes.deployment_version.build_id
            for event in history.events
            if event.HasField("workflow_task_completed_event_attributes")
        ]
        assert "rec-b" in builds and builds[-1] == "rec-b" and builds[0] == "rec-a", builds
        await save(plan, "versioned-plan-gate.json")


if __name__ == "__main__":
    asyncio.run(main())
