"""Click options built from a settings model's fields, so a command declares none of them by
hand. The fields are read through their generated table (``client.option_table``; how a field
reads on the command line is ``client.option_fields``'), so ``--help`` builds no pydantic model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from client.option_table import OptionSpec, option_table

__all__ = ["field_option", "settings_options", "spec_option"]

F = TypeVar("F", bound=Callable[..., Any])


def _click_type(spec: OptionSpec) -> Any:
    if spec.kind == "choice":
        return click.Choice(spec.choices)
    bounded = not (spec.low is spec.high is None)
    if spec.kind == "int":  # an int field's bounds are ints (the table holds them as JSON numbers)
        low, high = (None if b is None else int(b) for b in (spec.low, spec.high))
        return click.IntRange(min=low, max=high) if bounded else int
    if spec.kind == "float":
        return click.FloatRange(min=spec.low, max=spec.high) if bounded else float
    return click.STRING


def spec_option(spec: OptionSpec, command_defaults: bool = True) -> Callable[[F], F]:
    """The click option of one table row; without ``command_defaults`` it defaults to None."""
    if spec.kind == "multiple":
        return click.option(
            spec.flag, spec.dest, multiple=True, metavar=spec.metavar, help=spec.help
        )
    if spec.kind == "flag":
        return click.option(spec.flag, spec.dest, is_flag=True, help=spec.help)
    default = spec.default if command_defaults else None
    return click.option(
        spec.flag,
        spec.dest,
        type=_click_type(spec),
        default=default,
        show_default=default is not None,
        metavar=spec.metavar,
        help=spec.help,
    )


def field_option(table: str, dest: str) -> Callable[[F], F]:
    """The click option of one field of ``table`` (``TournamentSettings``: ``rubric``)."""
    (spec,) = [spec for spec in option_table(table) if spec.dest == dest]
    return spec_option(spec)


def settings_options(table: str, *, command_defaults: bool = True) -> Callable[[F], F]:
    """Every option of ``table`` (``TournamentSettings``, ``RunOptions``, ``ProfileRun``: see
    ``client.option_table``) as a click option, in the model's field order. Without
    ``command_defaults`` an option left out stays None, even where the command that runs
    applies a default (``ponder profile save`` records only what was given, so an unset field
    takes the think default when the profile is used)."""
    chosen = option_table(table)

    def apply(command: F) -> F:
        for spec in reversed(chosen):  # decorators apply bottom-up
            command = spec_option(spec, command_defaults)(command)
        return command

    return apply
