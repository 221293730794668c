"""Build and run a ponder worker: every workflow and activity on one task queue."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.call_model import ModelActivities
from activities.campaign.cells import CampaignCellActivities
from activities.campaign.report import CampaignArtifactActivities
from activities.config import Settings, known_secrets
from activities.plan.cel import CelActivities, CelEvaluator
from activities.plan.files import PlanFileActivities
from activities.plan.notify import NotifierActivities
from activities.plan.probes import FileProbeActivities
from activities.plan.roots import worker_roots
from activities.plan.training import TrainingActivities
from activities.plan.workspace import WorkspaceActivities
from activities.plan.worktrees import WorktreeActivities
from activities.routes import task_queue_polled
from activities.run_store import RunFileActivities, RunStore
from activities.tournament.artifacts import TournamentArtifactActivities
from activities.tournament.fit import adaptive_batch, bootstrap_leaderboard, fit_leaderboard
from worker.arity import ControlArity
from workflows.ask import AskWorkflow
from workflows.call_options import provider_task_queue
from workflows.campaign.workflow import CampaignWorkflow
from workflows.names import TASK_QUEUE
from workflows.plan_run.workflow import PlanRunWorkflow
from workflows.tournament.workflow import TournamentWorkflow

__all__ = ["WORKFLOWS", "WORKFLOW_RUNNER", "WorkerOptions", "running_worker"]

WORKFLOWS: list[type] = [AskWorkflow, TournamentWorkflow, PlanRunWorkflow, CampaignWorkflow]
WORKFLOW_RUNNER = SandboxedWorkflowRunner(
    restrictions=SandboxRestrictions.default.with_passthrough_modules("workflows")
)
"""The sandbox, with ponder's own ``workflows`` package passed through.

The sandbox imports a workflow's module afresh for every run it starts. The modules a workflow
file imports in its ``imports_passed_through`` block (nearly all of the workflow logic) were
shared already; the workflow files themselves, and the few modules they import outside that
block, were executed again per run: about 13 ms of worker CPU for every tournament started
(``benchmarks/many_runs``). The package keeps no module-level mutable state, so sharing it
changes nothing a run sees. What it gives up: the sandbox's restrictions (no clock, random or
I/O calls) no longer apply to the workflow files in the live worker, as they already did not to
the passed-through modules. tests/test_replay.py replays every saved history under the default
sandbox, so a restricted call on those paths still fails a test."""


@dataclass
class WorkerOptions:
    task_queue: str = TASK_QUEUE
    max_concurrent_activities: int = 64
    sticky_timeout: timedelta = timedelta(seconds=10)
    graceful_shutdown: timedelta = timedelta(minutes=10)
    """How long shutdown lets model calls in flight finish: a cancelled call is paid twice."""
    rate_limits: dict[str, float] = field(default_factory=dict)
    """provider name -> activities per second, served on ``<task_queue>.provider.<name>``.

    This only serves the queue: a run sends a provider's calls there when its input names the
    queue (``CallOptions.provider_queues``, filled by the client that starts it)."""
    embedded: bool = False
    """The single-user case (a command's own worker, the home's background worker): with no
    declared workspace roots, the user's home is one (``activities.plan.roots``)."""


@contextlib.asynccontextmanager
async def running_worker(
    client: Client, settings: Settings, options: WorkerOptions
) -> AsyncIterator[list[Worker]]:
    """Run the workers for ``options`` until the block exits, then shut them down gracefully."""
    async with httpx.AsyncClient(timeout=None) as http:
        roots = worker_roots(settings.workspace_roots, embedded=options.embedded)
        model = ModelActivities(settings, http, workspace_roots=roots)
        store = RunStore(settings.runs_dir, secrets=known_secrets(settings))
        files = RunFileActivities(store)
        tournament_files = TournamentArtifactActivities(store)
        campaign_cells = CampaignCellActivities(settings)
        campaign_files = CampaignArtifactActivities(store)
        workspace = WorkspaceActivities(roots, settings.runs_dir)
        worktrees = WorktreeActivities(store, roots)
        notifiers = NotifierActivities(settings.notifiers, http)
        training = TrainingActivities(settings.training_dir)
        # Plan expressions are evaluated in one child process this worker owns (started on
        # first use); their parser was built when the workflows were imported.
        cel = CelEvaluator()
        activities: list[Callable[..., Any]] = [
            model.call_model,
            files.write_run_files,
            tournament_files.write_tournament_artifacts,
            fit_leaderboard,
            adaptive_batch,
            bootstrap_leaderboard,
            campaign_cells.check_campaign_route,
            campaign_cells.settle_campaign_cell,
            campaign_files.write_campaign_artifacts,
            workspace.check_paths,
            workspace.snapshot_writes,
            workspace.check_landed,
            worktrees.probe,
            worktrees.base,
            worktrees.add,
            worktrees.finish,
            worktrees.merge,
            worktrees.land,
            FileProbeActivities(roots, settings.runs_dir).probe_files,
            CelActivities(cel).evaluate_cel,
            PlanFileActivities(store).write_plan_files,
            PlanFileActivities(store).read_checkpoint,
            notifiers.check_notifiers,
            notifiers.notify_gate,
            training.append_training_pair,
            task_queue_polled,
        ]
        workers = [
            Worker(
                client,
                task_queue=options.task_queue,
                workflows=WORKFLOWS,
                activities=activities,
                interceptors=[ControlArity()],
                workflow_runner=WORKFLOW_RUNNER,
                max_concurrent_activities=options.max_concurrent_activities,
                sticky_queue_schedule_to_start_timeout=options.sticky_timeout,
                graceful_shutdown_timeout=options.graceful_shutdown,
            )
        ]
        for provider, per_second in options.rate_limits.items():
            workers.append(
                Worker(
                    client,
                    task_queue=provider_task_queue(options.task_queue, provider),
                    activities=[model.call_model],
                    max_task_queue_activities_per_second=per_second,
                    graceful_shutdown_timeout=options.graceful_shutdown,
                )
            )
        tasks = [asyncio.create_task(w.run()) for w in workers]
        try:
            yield workers
        finally:
            await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
            await asyncio.gather(*tasks, return_exceptions=True)
            await cel.close()
