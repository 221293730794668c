"""How a settings model's fields read as command-line options, declared on the fields.

A field is its own option: ``--`` + its alias or name (hyphenated), its description the help,
its type the option's type. Where the command line differs, an ``Annotated`` marker
(``CliOption``) says how: another flag name, a default the command applies, a repeatable
``KEY=VALUE`` form. The click options are built from this in ``client.click_fields``; this
module imports no click, so the MCP server can put its arguments into the same option
vocabulary (``cli_values``) without loading the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["CliOption", "cli_defaults", "cli_marker", "cli_values", "option_dest", "option_flag"]


@dataclass(frozen=True)
class CliOption:
    """A field's command-line form where the plain rule does not fit."""

    flag: str | None = None
    """The option's name without ``--`` (default: the field's alias or name, hyphenated); the
    parameter the command receives is named after it too."""
    default: Any = None
    """What the command applies when the option is left out (shown in ``--help``); None: the
    field stays unset, so a saved profile may fill it."""
    multiple: bool = False
    """Repeatable: the values arrive as a tuple of strings; a mapping (or model) value is given
    as ``KEY=VALUE`` items."""
    metavar: str | None = None
    form: str | None = None
    """How a value is written on the command line, said after the description in ``--help``
    (the description is shared with the MCP schema, where a value is JSON)."""


_PLAIN = CliOption()


def cli_marker(info: FieldInfo) -> CliOption:
    found = [m for m in info.metadata if isinstance(m, CliOption)]
    return found[0] if found else _PLAIN


def option_flag(name: str, info: FieldInfo) -> str:
    """``--n``, ``--lambda``, ``--prompt-style``: the option a field is on the command line."""
    return "--" + (cli_marker(info).flag or info.alias or name).replace("_", "-")


def option_dest(name: str, info: FieldInfo) -> str:
    """The parameter name a command receives the field's option as (a keyword keeps its
    field name: ``lambda_``)."""
    flag = cli_marker(info).flag
    return flag.replace("-", "_") if flag else name


def _as_option(value: Any, marker: CliOption) -> Any:
    if not marker.multiple:
        return value
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value  # a model iterates (key, value)
    return tuple(f"{key}={item}" for key, item in items)


def cli_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """Each field's option value when the option is not given on the command line."""
    return {
        option_dest(name, info): _as_option(cli_marker(info).default, cli_marker(info))
        for name, info in model.model_fields.items()
    }


def cli_values(settings: BaseModel, fields: type[BaseModel]) -> dict[str, Any]:
    """The options ``settings`` sets among ``fields``' (the ones it leaves None or empty are
    left out), as the command line would give them."""
    values: dict[str, Any] = {}
    for name, info in fields.model_fields.items():
        value = getattr(settings, name)
        if value is None or value == {}:
            continue
        values[option_dest(name, info)] = _as_option(value, cli_marker(info))
    return values
