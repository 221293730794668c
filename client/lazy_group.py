"""A click group whose subcommands are imported when they are used.

``ponder --help`` lists every command from a table of names, import paths and one-line helps, and
imports none of them; ``ponder ask ...`` imports ``ask``'s module alone. The table's helps are
checked against the commands' own (tests/test_cli_lazy.py), so the two cannot drift apart.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

__all__ = ["LazyGroup", "load_command"]


def load_command(target: str) -> click.Command:
    """``"module:attribute"``: a click command, or a function that builds one."""
    module_name, _, attribute = target.partition(":")
    found = getattr(importlib.import_module(module_name), attribute)
    command = found if isinstance(found, click.Command) else found()
    assert isinstance(command, click.Command), target
    return command


class LazyGroup(click.Group):
    def __init__(
        self,
        *args: Any,
        lazy_commands: dict[str, tuple[str, str]],
        on_load: Callable[[click.Command], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands
        self.loaded_hook: Callable[[click.Command], None] = on_load or (lambda _command: None)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            command = load_command(self.lazy_commands[cmd_name][0])
            self.loaded_hook(command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            # An unloaded command is listed by a stand-in with its help, shortened the same way.
            command = self.commands.get(name) or click.Command(
                name, help=self.lazy_commands[name][1]
            )
            rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
