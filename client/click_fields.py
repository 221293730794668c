"""Click options built from a settings model's fields (``client.option_fields`` says how a field
reads on the command line), so a command declares none of them by hand."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from client.option_fields import cli_marker, option_dest, option_flag

__all__ = ["field_option", "settings_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _unwrapped(annotation: Any) -> Any:
    """``X | None`` as ``X``."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def _click_type(info: FieldInfo) -> Any:
    kind = _unwrapped(info.annotation)
    if get_origin(kind) is Literal:
        return click.Choice(get_args(kind))
    low: Any = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
    if kind is int:
        return int if low is None else click.IntRange(min=int(low))
    if kind is float:
        return float if low is None else click.FloatRange(min=float(low))
    if kind is str:
        return click.STRING
    raise TypeError(f"no command-line type for {info.annotation}: give it a CliOption(multiple)")


def field_option(model: type[BaseModel], name: str) -> Callable[[F], F]:
    """The click option of one field of ``model``."""
    info = model.model_fields[name]
    marker = cli_marker(info)
    if not info.description:
        raise TypeError(f"{model.__name__}.{name} has no description: it is the option's help")
    help_text = " ".join(
        part
        for part in (info.description, marker.form, "Repeatable." if marker.multiple else None)
        if part
    )
    if marker.multiple:
        return click.option(
            option_flag(name, info),
            option_dest(name, info),
            multiple=True,
            metavar=marker.metavar,
            help=help_text,
        )
    return click.option(
        option_flag(name, info),
        option_dest(name, info),
        type=_click_type(info),
        default=marker.default,
        show_default=marker.default is not None,
        metavar=marker.metavar,
        help=help_text,
    )


def settings_options(model: type[BaseModel]) -> Callable[[F], F]:
    """Every field of ``model`` as a click option, in the model's field order."""

    def apply(command: F) -> F:
        for name in reversed(list(model.model_fields)):  # decorators apply bottom-up
            command = field_option(model, name)(command)
        return command

    return apply
