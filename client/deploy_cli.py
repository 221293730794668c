"""``ponder deploy status|promote``: a cluster's Worker Deployment, for the common case.

What ``temporal worker deployment describe`` and ``set-current-version`` do, through ponder's
own client (its address, namespace, TLS and API key from ponder.toml and the environment), with
ponder's coded refusals. Ramping a share of new runs to a version, deleting versions and the
rest stay with the ``temporal`` CLI. docs/operating.md ("Deploying new code") tells the story.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from client.command_settings import command_settings
from worker.options import DEPLOYMENT

if TYPE_CHECKING:
    from temporalio.client import Client

    from activities.config import Settings
    from worker.deployment_status import DeploymentState

__all__ = ["deploy", "print_state"]

_DEPLOYMENT = click.option(
    "--deployment",
    "name",
    default=DEPLOYMENT,
    show_default=True,
    metavar="NAME",
    help="The Worker Deployment (the workers' --deployment).",
)


async def _client(settings: Settings) -> Client:
    from client.connect import connect
    from worker.deployment import DEPLOYMENT_EMBEDDED, DeployError

    if not settings.temporal_address:
        raise DeployError(
            DEPLOYMENT_EMBEDDED,
            "ponder deploy manages a cluster's versioned workers: set TEMPORAL_ADDRESS (the "
            "embedded server's workers are unversioned, so there is nothing to deploy)",
        )
    return await connect(settings)


def _ago(when: datetime | None, now: datetime) -> str:
    return "-" if when is None else f"{max(0.0, (now - when).total_seconds()):.0f}s ago"


def print_state(state: DeploymentState, now: datetime) -> None:
    click.echo(f"deployment {state.name}")
    click.echo(f"current   {state.current or 'unversioned workers'}")
    ramping = f"{state.ramping} ({state.ramping_percent:g}% of new runs)" if state.ramping else "-"
    click.echo(f"ramping   {ramping}")
    rows = [("BUILD ID", "STATUS", "DRAINAGE", "POLLERS", "LAST POLL", "TASK QUEUES")]
    rows += [
        (
            v.build_id,
            v.status,
            v.drainage or "-",
            str(v.pollers),
            _ago(v.last_poll, now),
            ", ".join(v.task_queues) or "-",
        )
        for v in state.versions
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*padded, row[-1]]))


def _as_json(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


@click.group("deploy")
def deploy() -> None:
    """A cluster's Worker Deployment: which build takes new runs, which still drains."""


@deploy.command("status")
@_DEPLOYMENT
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of the table.")
@click.pass_context
def status(ctx: click.Context, name: str, as_json: bool) -> None:
    """Show the current and ramping versions and, per version: its status (current, ramping,
    draining, drained, inactive), whether runs pinned to it still drain, and its pollers."""
    from worker.deployment_status import deployment_state

    settings = command_settings(ctx)

    async def go() -> DeploymentState:
        return await deployment_state(await _client(settings), name)

    state = asyncio.run(go())
    if as_json:
        payload = asdict(state, dict_factory=lambda kv: {k: _as_json(v) for k, v in kv})
        click.echo(json.dumps(payload, indent=2))
    else:
        print_state(state, datetime.now(UTC))


@deploy.command("promote")
@click.argument("build_id", required=False)
@_DEPLOYMENT
@click.pass_context
def promote(ctx: click.Context, build_id: str | None, name: str) -> None:
    """Make BUILD_ID (default: the newest version) the current version: new runs start on it,
    and running plans and campaigns move to it at their next step. Runs pinned to the version
    it replaces (Ask, tournaments, campaign cells) finish there: keep its workers until `ponder
    deploy status` shows it drained."""
    from worker import deployment

    settings = command_settings(ctx)

    async def go() -> tuple[str, str | None]:
        return await deployment.promote(await _client(settings), name, build_id)

    promoted, previous = asyncio.run(go())
    if previous == promoted:
        click.echo(f"deployment {name}: {promoted} is current already")
        return
    was = previous or "unversioned workers"
    click.echo(f"deployment {name}: {promoted} is current (was {was})")
    if previous:
        click.echo(
            f"runs pinned to {previous} finish there: keep its workers until `ponder deploy "
            "status` shows it drained"
        )
