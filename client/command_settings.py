"""The settings a ``ponder`` command runs with: ``ponder.toml`` from ``--config`` (given before or
after the subcommand; both land in the root context's object), else the usual search."""

from __future__ import annotations

import click

from activities.config import Settings, load_settings

__all__ = ["command_settings"]


def command_settings(ctx: click.Context) -> Settings:
    # The root's object: commands also sit under groups (``ponder campaign status``) and run
    # standalone in tests, where no root callback set one.
    return load_settings((ctx.find_root().obj or {}).get("config"))
