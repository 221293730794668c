"""Build and run a ponder worker: every workflow and activity on one task queue."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import temporalio
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
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
from activities.run_files import RunFileActivities
from activities.run_store import RunStore
from activities.tournament.artifacts import TournamentArtifactActivities
from activities.tournament.fit import adaptive_batch, bootstrap_leaderboard, fit_leaderboard
from worker.arity import ControlArity
from worker.deployment import deployment_config
from worker.run_metrics import RunMetrics
from workflows import json_schemas
from workflows.ask import AskWorkflow
from workflows.call_options import provider_task_queue
from workflows.campaign.workflow import CampaignWorkflow
from workflows.ledger.workflow import LedgerWorkflow
from workflows.names import TASK_QUEUE
from workflows.plan import expressions
from workflows.plan_run.workflow import PlanRunWorkflow
from workflows.tournament.workflow import TournamentWorkflow
from workflows.versioned import VERSIONED

__all__ = ["WORKFLOWS", "WorkerOptions", "build_id", "running_worker", "workflow_runner"]

WORKFLOWS: list[type] = [
    AskWorkflow,
    TournamentWorkflow,
    PlanRunWorkflow,
    CampaignWorkflow,
    LedgerWorkflow,
]

# Pause schemas and plan expressions load their libraries on first use, so that validating a
# small plan in the CLI skips them; a worker loads them now, before its first workflow task, so
# that no task (and no replay, in or out of the sandbox) imports them or pays for them. The
# sandbox passes them through: a workflow reaches them only through these pure modules.
json_schemas.load()
expressions.load()
_LOADED_LIBRARIES = ("jsonschema", "jsonschema_specifications", "referencing", "lark")


def workflow_runner(sandboxed: bool) -> WorkflowRunner:
    """Temporal's sandbox when ``sandboxed`` (``Settings.workflow_sandbox``), else none.

    The sandbox re-imports a workflow's file for every run it starts (about 13 ms of worker CPU
    a tournament) and enters itself for every activation and for every payload of one (a
    tournament's 170 payload visits cost about 15 ms more): some 30 ms of a quick tournament's
    200 ms of worker CPU (``benchmarks/many_runs``). What it buys is a check that workflow code
    makes no clock, random or I/O call, and nearly all of ponder's workflow logic lives in
    modules the workflow files import passed through, which it never checked. So the live
    worker runs without it; the test suite turns it on (tests/conftest.py), so the workflow files
    are checked on every path a test runs, and tests/test_replay.py replays the saved histories
    under it.
    """
    if not sandboxed:
        return UnsandboxedWorkflowRunner()
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*_LOADED_LIBRARIES)
    return SandboxedWorkflowRunner(restrictions=restrictions)


@functools.cache
def build_id() -> str:
    """What this worker's workflow tasks are marked with in history: the SDK's version and a
    digest of ponder's Python sources. Unversioned, it only names the code; a ``--deployment``
    worker's version is this (or ``--build-id``), and Temporal routes runs by it. The SDK's
    default hashes the bytecode of every loaded module, 0.14 s of CPU at each worker start
    (1,139 modules); reading ponder's 262 files takes about 13 ms."""
    digest = hashlib.md5(usedforsecurity=False)
    for package in ("activities", "client", "worker", "workflows"):
        root = Path(str(importlib.import_module(package).__file__)).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return f"ponder-{digest.hexdigest()[:16]}-temporalio-{temporalio.__version__}"


@dataclass
class WorkerOptions:
    task_queue: str = TASK_QUEUE
    max_concurrent_activities: int = 64
    eager_activities: int = 8
    """Activities of one workflow task this worker starts straight from the server's answer to
    the task's completion, not through the task queue: a tournament phase's default
    concurrency. The SDK's default of 3 sent the fourth call of a quick tournament's round
    through matching, about 3.5 ms later than the others, so the whole round waited for it."""
    sticky_timeout: timedelta = timedelta(seconds=10)
    graceful_shutdown: timedelta = timedelta(minutes=10)
    """How long shutdown lets model calls in flight finish: a cancelled call is paid twice."""
    rate_limits: dict[str, float] = field(default_factory=dict)
    """provider name -> activities per second, served on ``<task_queue>.provider.<name>``.

    This only serves the queue: a run sends a provider's calls there when its input names the
    queue (``CallOptions.provider_queues``, filled by the client that starts it)."""
    embedded: bool = False
    """The single-user case (a command's own worker, the home's background worker): with no
    declared workspace roots, each serves the directories the home's embedded workers started
    in (``activities.plan.roots``)."""
    deployment: str | None = None
    """A Worker Deployment this worker serves a version of (``worker.deployment``); None: an
    unversioned worker, which takes whatever no version claims."""
    build_id: str | None = None
    """The version's build id in place of ``build_id()``: for an operator's own release names,
    and for tests that need two builds of one source tree."""

    @property
    def version(self) -> str:
        """The build id this worker marks its tasks with (its version's, when versioned)."""
        return self.build_id or build_id()


@contextlib.asynccontextmanager
async def running_worker(
    client: Client, settings: Settings, options: WorkerOptions
) -> AsyncIterator[list[Worker]]:
    """Run the workers for ``options`` until the block exits, then shut them down gracefully."""
    async with httpx.AsyncClient(timeout=None) as http:
        roots = worker_roots(settings.workspace_roots, settings=settings, embedded=options.embedded)
        model = ModelActivities(
            settings, http, workspace_roots=roots, ledger_queue=options.task_queue
        )
        # One cipher for every run file this worker writes (encrypt_run_files), raw events too.
        store = RunStore(
            settings.runs_dir, secrets=known_secrets(settings), cipher=model.store.cipher
        )
        files = RunFileActivities(store)
        tournament_files = TournamentArtifactActivities(store)
        campaign_cells = CampaignCellActivities(settings)
        campaign_files = CampaignArtifactActivities(store)
        workspace = WorkspaceActivities(roots, settings.runs_dir)
        worktrees = WorktreeActivities(store, roots)
        notifiers = NotifierActivities(settings.notifiers, http)
        training = TrainingActivities(settings.training_dir, store)
        # Plan expressions are evaluated in a few child processes this worker owns (started
        # on first use), shared fairly between runs, each run within its own time budget.
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
        build = options.version
        # A versioned worker takes a version's tasks only, and registers each workflow with its
        # versioning behaviour (workflows.versioned); an unversioned one marks its tasks.
        versioning: dict[str, Any] = (
            {"deployment_config": deployment_config(options.deployment, build)}
            if options.deployment
            else {"build_id": build}
        )
        workflows = [VERSIONED.get(c, c) for c in WORKFLOWS] if options.deployment else WORKFLOWS
        workers = [
            Worker(
                client,
                task_queue=options.task_queue,
                workflows=workflows,
                activities=activities,
                interceptors=[ControlArity(), RunMetrics()],
                workflow_runner=workflow_runner(settings.workflow_sandbox),
                **versioning,
                max_concurrent_activities=options.max_concurrent_activities,
                max_eager_activity_reservations_per_workflow_task=options.eager_activities,
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
                    **versioning,
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
