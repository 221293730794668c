"""The settings a ``ponder`` command runs with: ``ponder.toml`` from ``--config`` (given before or
after the subcommand; both land in the root context's object), else the usual search."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from activities.config import Settings

__all__ = ["command_settings"]


def command_settings(ctx: click.Context) -> Settings:
    # Imported here: the settings' pydantic models cost about a tenth of a second, which a
    # command's --help, declared in a module that imports this one, must not pay.
    from activities.config import load_settings

    # The root's object: commands also sit under groups (``ponder campaign status``) and run
    # standalone in tests, where no root callback set one.
    return load_settings((ctx.find_root().obj or {}).get("config"))
