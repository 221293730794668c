"""Which runner a worker runs workflows in: none live, Temporal's sandbox in the test suite."""

from __future__ import annotations

import uuid

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from activities.config import Settings
from worker.worker import WorkerOptions, running_worker


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
