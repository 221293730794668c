"""``ponder ledger show|extend NAME`` and ``--ledger NAME``: shared spend ledgers from the CLI.

A ledger is declared in ponder.toml (``[ledgers.NAME]``) and counted by its ``Ledger`` entity
workflow (``workflows/ledger/``). ``--ledger NAME`` on ``think``, ``rank``, ``mutate``, ``ask``,
``plan run`` and ``campaign run`` puts ``calls.ledger`` in the run's input with the ledger's
draw token, read from its 0600 file on the user's behalf (``attach_ledger``). ``extend``
raises the entity's limits (absolute, or ``+N``); the ledger then tells every run it had
refused, and they go on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from client.command_settings import command_settings
from client.ledgers import COMMAND_LEDGER, extend_ledger, ledger_view, unknown_ledger

# ``ledger_option`` is on every command that starts runs: asyncio and the SDK load in the
# subcommands' bodies, not with it.
if TYPE_CHECKING:
    from workflows.ledger.types import LedgerView

__all__ = ["ledger", "ledger_option"]


def _remember(_ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        COMMAND_LEDGER.set(value)


ledger_option = click.option(
    "--ledger",
    default=None,
    metavar="NAME",
    expose_value=False,
    callback=_remember,
    help="Draw every paid call on the shared ledger NAME ([ledgers.NAME] in ponder.toml); "
    "the run pauses awaiting_budget while it is spent.",
)


def _print(view: LedgerView) -> None:
    limits = view.limits

    def of(used: float, limit: float | None) -> str:
        return f"{used:g} / {'unlimited' if limit is None else f'{limit:g}'}"

    period = "none" if limits.period_s is None else f"{limits.period_s}s from {view.period_start}"
    click.echo(f"ledger   {view.name}")
    click.echo(f"period   {period}")
    click.echo(f"calls    {of(view.calls, limits.calls)} ({view.held_calls} held in {view.holds})")
    click.echo(f"tokens   {of(view.tokens, limits.tokens)}")
    click.echo(f"usd      {of(round(view.usd, 6), limits.usd)}")
    state = f"spent ({view.blocking})" if view.blocking else "open"
    click.echo(f"state    {state}; {len(view.waiting)} run(s) waiting")
    for run in view.waiting:
        click.echo(f"  waiting {run}")


@click.group()
def ledger() -> None:
    """Shared spend ledgers: one budget every run started with --ledger NAME draws on."""


@ledger.command()
@click.argument("name")
@click.pass_context
def show(ctx: click.Context, name: str) -> None:
    """What ledger NAME has spent this period, what is held, and which runs wait on it."""
    import asyncio

    from client.session import open_session

    settings = command_settings(ctx)

    async def go() -> LedgerView | None:
        async with open_session(settings) as session:  # a worker answers the query
            return await ledger_view(session.client, name)

    view = asyncio.run(go())
    if view is None:
        if name not in settings.ledgers:
            raise unknown_ledger(settings, name)
        click.echo(f"ledger {name}: nothing has drawn on it yet")
        return
    _print(view)


@ledger.command()
@click.argument("name")
@click.option("--calls", default=None, help="New calls limit (absolute, or +N).")
@click.option("--tokens", default=None, help="New tokens limit, input + output (or +N).")
@click.option("--usd", default=None, help="New USD limit (absolute, or +X).")
@click.pass_context
def extend(
    ctx: click.Context, name: str, calls: str | None, tokens: str | None, usd: str | None
) -> None:
    """Raise ledger NAME's limits; every run waiting on it goes on."""
    import asyncio

    from activities.errors import ConfigError
    from client.session import open_session

    if calls is None and tokens is None and usd is None:
        raise ConfigError(
            "option.missing",
            "ledger extend needs a new limit: give --calls, --tokens or --usd (or +N to add)",
        )
    settings = command_settings(ctx)

    async def go() -> LedgerView:
        async with open_session(settings) as session:
            return await extend_ledger(
                session.client, session.settings, name, calls=calls, tokens=tokens, usd=usd
            )

    _print(asyncio.run(go()))
