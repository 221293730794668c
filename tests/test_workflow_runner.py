"""How a worker runs: which runner its workflows run in (none live, Temporal's sandbox in the
test suite), and how many of a workflow task's activities it starts eagerly."""

from __future__ import annotations

import uuid

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from activities.config import Settings
from worker.worker import WorkerOptions, running_worker
from workflows.tournament.types import Concurrency


async def test_a_worker_runs_workflows_sandboxed_only_when_its_settings_say_so(
    client: Client, settings: Settings
) -> None:
    assert Settings.model_fields["workflow_sandbox"].default is False  # the live worker
    assert settings.workflow_sandbox is True  # tests/conftest.py: the suite checks workflows
    for sandboxed, runner in ((True, SandboxedWorkflowRunner), (False, UnsandboxedWorkflowRunner)):
        options = WorkerOptions(f"runner-{uuid.uuid4().hex[:8]}")
        chosen = settings.model_copy(update={"workflow_sandbox": sandboxed})
        async with running_worker(client, chosen, options) as workers:
            assert isinstance(workers[0].config()["workflow_runner"], runner)


async def test_a_worker_starts_a_phases_default_concurrency_of_calls_eagerly(
    client: Client, settings: Settings
) -> None:
    """Not the SDK's 3: a round of a tournament's default concurrency starts whole from the
    server's answer to the workflow task that scheduled it (``benchmarks/quick_latency``)."""
    options = WorkerOptions(f"eager-{uuid.uuid4().hex[:8]}")
    assert options.eager_activities == Concurrency().judge == Concurrency().generate == 8
    async with running_worker(client, settings, options) as workers:
        config = workers[0].config()
        assert config["max_eager_activity_reservations_per_workflow_task"] == 8
        assert not config.get("disable_eager_activity_execution")
