"""``ponder server``: the embedded Temporal server in the foreground, and its address."""

from __future__ import annotations

import asyncio
import signal
import sys

import click

from activities.errors import ServerError
from client.command_settings import command_settings
from client.embedded import EmbeddedServer
from worker.startup import imports_done

__all__ = ["server"]


@click.group(invoke_without_command=True)
@click.option(
    "--port",
    type=int,
    default=None,
    help="gRPC port (default: a free one; 7233 is the `temporal` CLI's default).",
)
@click.pass_context
def server(ctx: click.Context, port: int | None) -> None:
    """Run the embedded Temporal server in the foreground, with its Web UI.

    `ponder server address` prints the address of the one running.
    """
    if ctx.invoked_subcommand is not None:
        return
    settings = command_settings(ctx)

    async def go() -> None:
        imports_done()  # it runs until stopped, and never connects
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with EmbeddedServer(settings.home).lease(port) as info:
            click.echo(f"Temporal server at {info.address} (pid {info.pid}, db {info.db})")
            click.echo(f"Web UI: {info.ui_url}")
            click.echo("Ctrl-C stops it once no other ponder process uses it.")
            sys.stdout.flush()
            await stop.wait()

    asyncio.run(go())


@server.command("address")
@click.option(
    "--wait",
    "wait_s",
    type=float,
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="Wait this long for a server that is starting.",
)
@click.pass_context
def server_address(ctx: click.Context, wait_s: float) -> None:
    """Print the running embedded server's address (host:port), e.g. for TEMPORAL_ADDRESS."""
    settings = command_settings(ctx)
    found = asyncio.run(EmbeddedServer(settings.home).running(wait_s))
    if found is None:
        raise ServerError(
            "server.not_running",
            f"no embedded server runs for {settings.home}: start one with `ponder server` "
            "(add --wait SECONDS if it is starting)",
        )
    click.echo(found.address)
