"""Click options built from a settings model's fields, so a command declares none of them by
hand. The fields are read through their generated table (``client.option_table``; how a field
reads on the command line is ``client.option_fields``'), so ``--help`` builds no pydantic model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from client.option_table import OptionSpec, option_table

__all__ = ["settings_options", "spec_option"]

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
    """The click option of one table row, and a hidden one for each earlier flag of it (into the
    same parameter, with the same default); without ``command_defaults`` it defaults to None."""
    made = [_option(spec.flag, spec, command_defaults, hidden=False)]
    made += [_option(alias, spec, command_defaults, hidden=True) for alias in spec.aliases]

    def apply(command: F) -> F:
        for option in made:  # the option itself listed last: it names the parameter in --help
            command = option(command)
        return command

    return apply


def _option(flag: str, spec: OptionSpec, command_defaults: bool, *, hidden: bool) -> Any:
    shown = f"Earlier name of {spec.flag}." if hidden else spec.help
    if spec.kind == "multiple":
        return click.option(
            flag, spec.dest, multiple=True, metavar=spec.metavar, help=shown, hidden=hidden
        )
    if spec.kind == "flag":
        return click.option(flag, spec.dest, is_flag=True, help=shown, hidden=hidden)
    default = spec.default if command_defaults else None
    return click.option(
        flag,
        spec.dest,
        type=_click_type(spec),
        default=default,
        show_default=default is not None,
        metavar=spec.metavar,
        help=shown,
        hidden=hidden,
    )


def settings_options(table: str, *, command_defaults: bool = True) -> Callable[[F], F]:
    """Every option of ``table`` (``TournamentSettings``, ``RunOptions``, ``ProfileRun``,
    ``RankOptions``, ``MutateOptions``: see ``client.option_table``) as a click option, in the
    model's field order. Without ``command_defaults`` an option left out stays None, even where
    the command that runs applies a default (``ponder profile save`` records only what was
    given, so an unset field takes the think default when the profile is used)."""
    chosen = option_table(table)

    def apply(command: F) -> F:
        for spec in reversed(chosen):  # decorators apply bottom-up
            command = spec_option(spec, command_defaults)(command)
        return command

    return apply
