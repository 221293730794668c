"""``python -m worker``: the worker's own entry point, for a cluster (``TEMPORAL_ADDRESS``).

It imports nothing from ``client``: the flags, the settings they make and the serve loop live
here, and ``ponder worker`` (``client/worker_cli.py``) adds to them what needs the client: the
embedded server's lease and the home's background-worker record. A refusal is one coded line,
``python -m worker: CODE: message``, exit 2 (the CLI's ``client.failures`` says the same
through ``ponder worker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import click
from temporalio.client import Client
from temporalio.service import RPCError

from activities.config import Settings, load_settings, short_secret_names
from activities.errors import ConfigError, ServerError
from activities.plan.roots import worker_roots
from activities.raw_events import MIN_REDACTED_CHARS
from activities.run_file_crypto import run_file_cipher
from worker.connect import connect
from worker.deployment import (
    DEPLOYMENT_EMBEDDED,
    DeployError,
    check_build_id,
    check_deployment_name,
    take_first_version,
)
from worker.exits import leave
from worker.logs import configure_logging, serve_metrics
from worker.options import worker_options
from worker.worker import WorkerOptions, running_worker
from workflows.errors import PonderError

__all__ = ["leave", "main", "serve", "worker_command", "worker_options", "worker_settings"]

EXIT_REFUSED = 2
IDLE_CHECK_S = 5.0
"""How often a worker with ``--exit-when-idle`` counts the open runs of its task queue."""


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


def worker_settings(
    *,
    embedded: bool,
    task_queue: str | None,
    max_concurrent_activities: int,
    rate_limits: tuple[str, ...],
    heartbeat_timeout: str | None,
    sticky_timeout: float,
    namespace: str | None,
    tls: bool | None,
    api_key_env: str | None,
    workspace_roots: tuple[str, ...],
    config: str | None,
    metrics_bind: str | None = None,
    deployment: str | None = None,
    build_id: str | None = None,
    encrypt_run_files: bool | None = None,
) -> tuple[Settings, WorkerOptions]:
    """The settings and worker options the flags (and ponder.toml) make."""
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
        metrics_bind=metrics_bind,
        encrypt_run_files=encrypt_run_files,
    )
    run_file_cipher(settings)  # encryption.run_files_need_keyring before anything starts
    options = WorkerOptions(
        task_queue=settings.task_queue,
        max_concurrent_activities=max_concurrent_activities,
        sticky_timeout=timedelta(seconds=sticky_timeout),
        rate_limits=_parse_rate_limits(rate_limits),
        embedded=embedded or not settings.temporal_address,
        deployment=None if deployment is None else check_deployment_name(deployment),
        build_id=None if build_id is None else check_build_id(build_id),
    )
    if options.deployment and options.embedded:
        # Each command runs its own unversioned worker on the embedded server (and starts its
        # runs eagerly on it): a versioned worker beside them would split one queue's runs.
        raise DeployError(
            DEPLOYMENT_EMBEDDED,
            "--deployment versions a cluster's workers: set TEMPORAL_ADDRESS to the cluster, "
            "or drop --deployment for the embedded server",
        )
    return settings, options


async def _running_count(client: Client, task_queue: str) -> int:
    """Runs still open on the queue; a server that does not answer counts as busy."""
    query = f'TaskQueue="{task_queue}" AND ExecutionStatus="Running"'
    try:
        return (await client.count_workflows(query)).count
    except RPCError:
        return 1


def _nothing() -> None:
    return None


def _stay(held: object) -> None:
    return None


async def serve(
    client: Client,
    settings: Settings,
    options: WorkerOptions,
    *,
    exit_when_idle: float | None,
    leaving: Callable[[], object] = _nothing,
    staying: Callable[[object], None] = _stay,
) -> None:
    """Run the worker until SIGTERM or SIGINT, or ``exit_when_idle`` seconds with nothing
    running on its queue. ``leaving`` runs when it decides to go (then, if a run arrived in the
    meantime, ``staying`` with what ``leaving`` returned, and it goes on) and when it stops."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with running_worker(client, settings, options):
        click.echo(f"ponder worker polling {options.task_queue!r}", err=True)
        if options.deployment:
            line = await take_first_version(client, options.deployment, options.version)
            click.echo(line, err=True)
        roots = worker_roots(
            settings.workspace_roots, settings=settings, embedded=options.embedded
        ).current()
        click.echo(f"plan workspaces allowed under: {', '.join(roots) or 'nothing'}", err=True)
        for name in short_secret_names(settings):  # the value itself is never shown
            click.echo(
                f"warning: {name} holds a key under {MIN_REDACTED_CHARS} characters: too short "
                "to redact from answers and files without mangling them, so it is not; use "
                "a real key if it must stay secret",
                err=True,
            )
        idle_since = time.monotonic()
        # An idle limit shorter than the check interval is checked as often as it asks.
        interval = IDLE_CHECK_S if exit_when_idle is None else min(IDLE_CHECK_S, exit_when_idle)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(interval, 0.1))
            if exit_when_idle is None:
                continue
            if await _running_count(client, options.task_queue):
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= exit_when_idle:
                # A command may reuse this worker for a run it just started: recheck after
                # ``leaving`` (the background worker leaves its reuse record there).
                held = leaving()
                if await _running_count(client, options.task_queue):
                    staying(held)
                    idle_since = time.monotonic()
                    continue
                click.echo("ponder worker idle; exiting", err=True)
                break
        leaving()  # a draining worker is not one to reuse


@click.command("worker")
@worker_options
def worker_command(exit_when_idle: float | None, **flags: Any) -> None:
    """Run a worker for the cluster at TEMPORAL_ADDRESS (TEMPORAL_API_KEY, TEMPORAL_TLS=1 for a
    hosted one). `ponder worker` also serves the embedded server."""
    settings, options = worker_settings(embedded=False, **flags)
    if not settings.temporal_address:
        raise ServerError(
            "server.unavailable",
            "python -m worker serves a cluster: set TEMPORAL_ADDRESS (for the embedded server "
            "run `ponder worker`)",
        )

    serve_metrics(settings.metrics_bind)  # a taken port refuses the worker before it connects

    async def go() -> None:
        client = await connect(settings)
        await serve(client, settings, options, exit_when_idle=exit_when_idle)

    asyncio.run(go())


def main() -> NoReturn:
    """``python -m worker``: a refusal is one coded line and exit 2; ``--debug`` is not taken."""
    prog = "python -m worker"
    configure_logging(argv=[prog, "worker"])
    code = 0
    try:
        worker_command.main(prog_name=prog, standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.UsageError as exc:
        click.echo(f"{prog}: usage.invalid: {exc.format_message()}", err=True)
        code = EXIT_REFUSED
    except PonderError as exc:
        click.echo(f"{prog}: {exc.line()}", err=True)
        code = EXIT_REFUSED
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    leave(code)
