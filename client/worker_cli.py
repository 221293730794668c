"""``python -m worker`` / ``ponder worker``: serve ponder's workflows and activities."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from datetime import timedelta
from pathlib import Path

import click
from temporalio.client import Client
from temporalio.service import RPCError

from activities.config import Settings, load_settings
from activities.errors import ConfigError
from activities.plan.roots import worker_roots
from client.connect import connect
from client.embedded import EmbeddedServer
from client.session import reclaim_background_worker, release_background_worker
from worker.worker import WorkerOptions, running_worker

__all__ = ["worker_command"]


def _parse_rate_limits(values: tuple[str, ...]) -> dict[str, float]:
    limits = {}
    for value in values:
        provider, sep, rate = value.partition("=")
        try:
            if not sep or not provider or not rate.endswith("/s"):
                raise ValueError
            limits[provider] = float(rate[:-2])
            if not 0 < limits[provider] < float("inf"):
                raise ValueError
        except ValueError:
            raise ConfigError(
                "option.invalid", f"--rate-limit {value!r} is not PROVIDER=N/s (e.g. openai=5/s)"
            ) from None
    return limits


async def _running_count(client: Client, task_queue: str) -> int:
    """Runs still open on the queue; a server that does not answer counts as busy."""
    query = f'TaskQueue="{task_queue}" AND ExecutionStatus="Running"'
    try:
        return (await client.count_workflows(query)).count
    except RPCError:
        return 1


async def _serve(
    client: Client, settings: Settings, options: WorkerOptions, exit_when_idle: float | None
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with running_worker(client, settings, options):
        click.echo(f"ponder worker polling {options.task_queue!r}", err=True)
        roots = worker_roots(settings.workspace_roots, embedded=options.embedded)
        click.echo(f"plan workspaces allowed under: {', '.join(roots) or 'nothing'}", err=True)
        idle_since = time.monotonic()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 5.0)
            if exit_when_idle is None:
                continue
            if await _running_count(client, options.task_queue):
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= exit_when_idle:
                # A command may reuse this worker for a run it just started: recheck after
                # leaving the reuse record (client/session.py).
                release_background_worker(settings)
                if await _running_count(client, options.task_queue):
                    reclaim_background_worker(settings)
                    idle_since = time.monotonic()
                    continue
                click.echo("ponder worker idle; exiting", err=True)
                break
        release_background_worker(settings)  # a draining worker is not one to reuse


async def run_worker(
    settings: Settings, options: WorkerOptions, *, embedded: bool, exit_when_idle: float | None
) -> None:
    if embedded or not settings.temporal_address:
        async with EmbeddedServer(settings.home).lease() as info:
            client = await connect(settings, info.address)
            await _serve(client, settings, options, exit_when_idle)
    else:
        client = await connect(settings)
        await _serve(client, settings, options, exit_when_idle)


@click.command("worker")
@click.option(
    "--task-queue",
    envvar="PONDER_TASK_QUEUE",
    default=None,
    help="Task queue to poll  [default: ponder, or ponder.toml's task_queue]",
)
@click.option(
    "--max-concurrent-activities", default=64, show_default=True, help="Activities run at once."
)
@click.option(
    "--rate-limit",
    "rate_limits",
    multiple=True,
    metavar="PROVIDER=N/s",
    help="Serve PROVIDER's calls on task queue QUEUE.provider.PROVIDER at most N per second; "
    "runs started while it polls send PROVIDER's calls there.",
)
@click.option("--heartbeat-timeout", hidden=True, default=None, help="Removed: set per run.")
@click.option(
    "--sticky-timeout",
    default=10.0,
    show_default=True,
    help="Seconds a workflow waits for this worker's cache before moving on.",
)
@click.option("--embedded", is_flag=True, help="Use (and hold a lease on) the embedded server.")
@click.option(
    "--exit-when-idle",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Exit after SECONDS with no running workflow on the task queue.",
)
@click.option(
    "--namespace",
    envvar="TEMPORAL_NAMESPACE",
    default=None,
    help="Temporal namespace  [default: default, or ponder.toml's namespace]",
)
@click.option("--tls/--no-tls", default=None, help="TLS to the cluster (on with an API key).")
@click.option(
    "--api-key-env",
    default=None,
    metavar="NAME",
    help="Environment variable holding a hosted cluster's API key [default: TEMPORAL_API_KEY].",
)
@click.option(
    "--workspace-root",
    "workspace_roots",
    multiple=True,
    metavar="DIR",
    help="A directory plan runs may use as their workspace (repeatable; replaces [plans] "
    "workspace_roots). None declared: the directory the worker starts in, plus the home "
    "directory for an embedded worker.",
)
@click.option("--config", type=click.Path(), default=None, help="Path to ponder.toml.")
def worker_command(
    task_queue: str | None,
    max_concurrent_activities: int,
    rate_limits: tuple[str, ...],
    heartbeat_timeout: str | None,
    sticky_timeout: float,
    embedded: bool,
    exit_when_idle: float | None,
    namespace: str | None,
    tls: bool | None,
    api_key_env: str | None,
    workspace_roots: tuple[str, ...],
    config: str | None,
) -> None:
    """Run a worker: TEMPORAL_ADDRESS for a cluster (TEMPORAL_API_KEY, TEMPORAL_TLS=1 for a
    hosted one), else the embedded server."""
    if heartbeat_timeout is not None:
        # A worker setting would make two workers schedule different commands for one history.
        raise ConfigError(
            "option.removed",
            "--heartbeat-timeout is no longer a worker setting: it is part of each run's input "
            '(`"calls": {"heartbeat_timeout_s": 30}`); drop the flag',
        )
    settings = load_settings(
        config,
        task_queue=task_queue,
        namespace=namespace,
        temporal_tls=tls,
        temporal_api_key_env=api_key_env,
        workspace_roots=[Path(r).expanduser().absolute() for r in workspace_roots] or None,
    )
    options = WorkerOptions(
        task_queue=settings.task_queue,
        max_concurrent_activities=max_concurrent_activities,
        sticky_timeout=timedelta(seconds=sticky_timeout),
        rate_limits=_parse_rate_limits(rate_limits),
        embedded=embedded or not settings.temporal_address,
    )
    asyncio.run(run_worker(settings, options, embedded=embedded, exit_when_idle=exit_when_idle))
