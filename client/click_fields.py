"""Click options built from a settings model's fields (``client.option_fields`` says how a field
reads on the command line), so a command declares none of them by hand."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from client.option_fields import CliField, cli_fields, cli_marker

__all__ = ["field_option", "settings_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _unwrapped(annotation: Any) -> tuple[Any, list[Any]]:
    """``X | None`` as ``X``, and an ``Annotated`` type as its type and its constraints."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(kept) == 1:
            annotation = kept[0]
    constraints: list[Any] = []
    if get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        for item in extra:  # a pydantic Field(ge=...) holds its constraints as metadata
            constraints += item.metadata if isinstance(item, FieldInfo) else [item]
    return annotation, constraints


def _bound(constraints: Iterable[Any], kind: type[Any], attr: str) -> Any:
    return next((getattr(c, attr) for c in constraints if isinstance(c, kind)), None)


def _click_type(info: FieldInfo) -> Any:
    kind, inner = _unwrapped(info.annotation)
    constraints = [*info.metadata, *inner]
    if get_origin(kind) is Literal:
        return click.Choice(get_args(kind))
    low = _bound(constraints, annotated_types.Ge, "ge")
    high = _bound(constraints, annotated_types.Le, "le")
    if kind is int:
        return int if low is high is None else click.IntRange(min=low, max=high)
    if kind is float:
        return float if low is high is None else click.FloatRange(min=low, max=high)
    if kind is str:
        return click.STRING
    raise TypeError(f"no command-line type for {info.annotation}: give it a CliOption(multiple)")


def _option(field: CliField, where: str, command_defaults: bool = True) -> Callable[[F], F]:
    info, marker = field.info, field.marker
    default = marker.default if command_defaults else None
    if not info.description:
        raise TypeError(f"{where} has no description: it is the option's help")
    help_text = " ".join(
        part
        for part in (info.description, marker.form, "Repeatable." if marker.multiple else None)
        if part
    )
    if marker.multiple:
        return click.option(
            field.flag, field.dest, multiple=True, metavar=marker.metavar, help=help_text
        )
    if field.is_flag:
        return click.option(field.flag, field.dest, is_flag=True, help=help_text)
    return click.option(
        field.flag,
        field.dest,
        type=_click_type(info),
        default=default,
        show_default=default is not None,
        metavar=marker.metavar,
        help=help_text,
    )


def field_option(model: type[BaseModel], name: str) -> Callable[[F], F]:
    """The click option of one (not flattened) field of ``model``."""
    info = model.model_fields[name]
    return _option(CliField((name,), info, cli_marker(info)), f"{model.__name__}.{name}")


def settings_options(
    model: type[BaseModel],
    *,
    fields: Iterable[CliField] | None = None,
    command_defaults: bool = True,
) -> Callable[[F], F]:
    """Every option of ``model`` (or only ``fields``, some of its ``cli_fields``) as a click
    option, in the model's field order. Without ``command_defaults`` an option left out stays
    None, even where the command that runs applies a default (``ponder profile save`` records
    only what was given, so an unset field takes the think default when the profile is used)."""
    chosen = list(cli_fields(model) if fields is None else fields)

    def apply(command: F) -> F:
        for field in reversed(chosen):  # decorators apply bottom-up
            where = f"{model.__name__}.{'.'.join(field.path)}"
            command = _option(field, where, command_defaults)(command)
        return command

    return apply
