"""``ponder worker``: serve ponder's workflows and activities, on a cluster or the embedded server.

The flags, settings and serve loop are the worker's own (``worker/cli.py``, ``python -m
worker``); this adds what needs the client: ``--embedded`` (a lease on the home's embedded
server, also the default without ``TEMPORAL_ADDRESS``), ``ponder --config F worker``, and the
background-worker record (with its configuration's fingerprint) that ``--exit-when-idle``
leaves and reclaims. The worker itself is imported when the command runs, not for ``--help``.

On the embedded server a worker polls its configuration's own task queue
(``client.worker_fingerprint``: ``ponder.<digest>``), the queue every command with that
configuration sends its runs to, unless ``--task-queue`` names one on the command line (the
background worker a command spawns is told its command's queue so).
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
from typing import TYPE_CHECKING, Any

import click

from worker.options import worker_options

if TYPE_CHECKING:
    from activities.config import Settings
    from worker.worker import WorkerOptions

__all__ = ["worker_command"]

_terminating: list[int] = []
"""SIGTERMs that arrived while the worker was still importing."""


def _note_sigterm(signum: int, frame: object) -> None:
    _terminating.append(signum)


def _reclaim(settings: Settings, held: object) -> None:
    """Take the reuse record back: the fingerprint it held, else this configuration's."""
    from client.session import reclaim_background_worker
    from client.worker_fingerprint import worker_fingerprint

    fingerprint = held if isinstance(held, str) and held else worker_fingerprint(settings)
    reclaim_background_worker(settings, fingerprint)


async def run_worker(
    settings: Settings, options: WorkerOptions, *, embedded: bool, exit_when_idle: float | None
) -> None:
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from client.session import release_background_worker
    from worker.cli import serve

    # A SIGTERM at start-up (before ``serve`` takes the signal over) ends the worker in order:
    # by default it killed the process holding a lease, and the server it was the last user of
    # then ran on with nobody left to stop it.
    task = asyncio.current_task()
    if task is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    if _terminating:
        if embedded or not settings.temporal_address:  # the lease its spawner took for it
            EmbeddedServer(settings.home).drop_lease(os.getpid(), settings.server_idle_s)
        return
    hooks: dict[str, Any] = {
        "leaving": functools.partial(release_background_worker, settings),
        "staying": functools.partial(_reclaim, settings),
    }
    if embedded or not settings.temporal_address:
        async with EmbeddedServer(settings.home).lease(idle_s=settings.server_idle_s) as info:
            client = await connect(settings, info.address)
            await serve(client, settings, options, exit_when_idle=exit_when_idle, **hooks)
    else:
        client = await connect(settings)
        await serve(client, settings, options, exit_when_idle=exit_when_idle, **hooks)


@click.command("worker")
@worker_options
@click.option("--embedded", is_flag=True, help="Use (and hold a lease on) the embedded server.")
@click.pass_context
def worker_command(
    ctx: click.Context,
    embedded: bool,
    exit_when_idle: float | None,
    config: str | None,
    **flags: Any,
) -> None:
    """Run a worker: TEMPORAL_ADDRESS for a cluster (TEMPORAL_API_KEY, TEMPORAL_TLS=1 for a
    hosted one), else the embedded server."""
    signal.signal(signal.SIGTERM, _note_sigterm)
    from activities.errors import ConfigError
    from worker.cli import worker_settings
    from worker.logs import METRICS_BIND_IN_USE, serve_metrics

    config = config or (ctx.obj or {}).get("config")  # `ponder --config F worker` too
    settings, options = worker_settings(embedded=embedded, config=config, **flags)
    try:
        serve_metrics(settings.metrics_bind)  # a taken port refuses before the lease is taken
    except ConfigError as exc:
        if exit_when_idle is None or exc.code != METRICS_BIND_IN_USE:
            raise
        # A worker that leaves when idle is the one a command starts for its run: refusing it
        # would strand the run for a port its predecessor, still draining, holds.
        click.echo(f"warning: {exc.line()}; serving no metrics", err=True)
    named = ctx.get_parameter_source("task_queue") == click.core.ParameterSource.COMMANDLINE
    if (embedded or not settings.temporal_address) and not named:
        from client.worker_fingerprint import for_configuration

        settings = for_configuration(settings)
        options.task_queue = settings.task_queue
    try:
        asyncio.run(run_worker(settings, options, embedded=embedded, exit_when_idle=exit_when_idle))
    except asyncio.CancelledError:
        raise SystemExit(128 + signal.SIGTERM) from None
