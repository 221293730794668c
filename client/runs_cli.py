"""``ponder runs``: every run this home knows of (the rows: ``client.run_list``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from typing import Any

import click

from activities.errors import PonderError
from client.command_settings import command_settings
from client.embedded import EmbeddedServer
from client.run_states import KINDS, STATUSES

__all__ = ["runs"]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


@click.command("runs")
@click.option("--kind", type=click.Choice(KINDS), default=None, help="Only runs of this kind.")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only in this state.")
@click.option("--since", default=None, help="Only runs created since: 30m, 2h, 7d or a date.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most N rows."
)
@click.option("--cells", is_flag=True, help="Also list each campaign's cell runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON rows.")
@click.option(
    "--live",
    is_flag=True,
    help="Ask the server too while the embedded server is down (starts it).",
)
@click.pass_context
def runs(
    ctx: click.Context,
    kind: str | None,
    status: str | None,
    since: str | None,
    limit: int,
    cells: bool,
    as_json: bool,
    live: bool,
) -> None:
    """List runs (kind, status, created, calls, USD, winner or outcome), newest first."""
    from client.run_list import RunRow, list_runs, parse_since  # its rows: not for --help

    settings = command_settings(ctx)
    if since:
        parse_since(since)  # a bad value is refused before anything connects

    async def go() -> list[RunRow]:
        def listed(client: Any) -> Awaitable[list[RunRow]]:
            return list_runs(
                settings, client, kind=kind, status=status, since=since, limit=limit, cells=cells
            )

        if not settings.temporal_address:
            server = EmbeddedServer(settings.home)
            info = server.read_state()
            if info is not None and server.up():
                # The embedded server's HTTP API lists its runs as the SDK would, without the
                # SDK's import (a third of a second): read them so.
                from client.server_http import HttpUnanswered, ServerHttp

                with contextlib.suppress(HttpUnanswered):
                    return await listed(ServerHttp(info.http_port, settings.namespace))
            elif not live:
                # The embedded server is down, so no run of this home is moving: the run
                # store's rows are what the server would add to, without starting it (seconds).
                return await listed(None)
        from client.session import open_session  # not for --help, nor for the run store alone

        try:
            async with open_session(settings, worker=False) as session:
                return await listed(session.client)
        except PonderError as exc:  # no server: what the run store knows is still worth showing
            click.echo(f"ponder: the server did not answer ({exc}); run store only", err=True)
            return await listed(None)

    rows = asyncio.run(go())
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    if not rows:
        click.echo("no runs", err=True)
        return
    header = f"{'run id':<28} {'kind':<10} {'status':<15} {'created':<20} {'calls':>6} {'usd':>8}"
    click.echo(header + "  outcome")
    for r in rows:
        created = (r.created or "-")[:19].replace("T", " ")
        usd = "sim" if r.simulated else _cell(r.usd)
        click.echo(
            f"{r.run_id:<28} {r.kind:<10} {r.status:<15} {created:<20} {_cell(r.calls):>6} "
            f"{usd:>8}  {r.outcome or ''}"
        )
