"""How a settings model's fields read as command-line options, declared on the fields.

A field is its own option: ``--`` + its alias or name (hyphenated), its description the help,
its type the option's type. Where the command line differs, an ``Annotated`` marker
(``CliOption``) says how: another flag name, a default the command applies, a repeatable
``KEY=VALUE`` form, or a model whose own fields are the options (``budget``: ``--max-calls``,
``--max-usd``, ...). The click options are built from this in ``client.click_fields``; this
module imports no click, so the MCP server can put its arguments into the same option
vocabulary (``cli_values``) without loading the CLI.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = [
    "CliField",
    "CliOption",
    "cli_defaults",
    "cli_fields",
    "cli_given",
    "cli_marker",
    "cli_values",
    "option_dest",
    "option_flag",
]


@dataclass(frozen=True, eq=False)
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
    as ``KEY=VALUE`` items, a list item by item, a single value as one item."""
    metavar: str | None = None
    form: str | None = None
    """How a value is written on the command line, said after the description in ``--help``
    (the description is shared with the MCP schema, where a value is JSON)."""
    flatten: bool = False
    """The field is a model whose own fields are the options (an MCP argument keeps it whole)."""
    fields: Mapping[str, CliOption] = field(default_factory=dict)
    """With ``flatten``: the form of a sub-field whose option differs from the plain rule."""
    aliases: tuple[str, ...] = ()
    """Earlier names of the option (without ``--``), still taken but left out of ``--help``:
    renaming an option to its field's name must not break a script that uses the old one."""


_PLAIN = CliOption()


def cli_marker(info: FieldInfo) -> CliOption:
    found = [m for m in info.metadata if isinstance(m, CliOption)]
    return found[0] if found else _PLAIN


@dataclass(frozen=True)
class CliField:
    """One command-line option of a model: a field, or a field of a flattened field."""

    path: tuple[str, ...]
    """Attribute names from the model to the value: ``("n",)``, ``("budget", "max_calls")``."""
    info: FieldInfo
    marker: CliOption

    @property
    def flag(self) -> str:
        """``--n``, ``--lambda``, ``--prompt-style``: the option on the command line."""
        return "--" + (self.marker.flag or self.info.alias or self.path[-1]).replace("_", "-")

    @property
    def dest(self) -> str:
        """The parameter name a command receives the option as (a keyword keeps its field
        name: ``lambda_``)."""
        return self.marker.flag.replace("-", "_") if self.marker.flag else self.path[-1]

    @property
    def is_flag(self) -> bool:
        return self.info.annotation is bool

    @property
    def command_default(self) -> Any:
        """What the command takes when the option is left out."""
        if self.marker.default is not None:
            return self.marker.default
        if self.is_flag:
            return False
        # A field whose own default is a value (not None: unset) is what the command takes too.
        default = self.info.get_default(call_default_factory=True)
        return None if isinstance(default, BaseModel) else default

    def value(self, settings: BaseModel) -> Any:
        value: Any = settings
        for name in self.path:
            value = getattr(value, name)
        return value

    def given(self, settings: BaseModel) -> bool:
        """Whether ``settings`` was given this field (rather than left at its default)."""
        value: Any = settings
        for name in self.path:
            if not isinstance(value, BaseModel) or name not in value.model_fields_set:
                return False
            value = getattr(value, name)
        return True


def _model_type(info: FieldInfo) -> type[BaseModel]:
    kind = info.annotation
    if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
        raise TypeError(f"CliOption(flatten) needs a model-typed field, not {kind}")
    return kind


def cli_fields(model: type[BaseModel]) -> Iterator[CliField]:
    """Every option of ``model``, in field order (a flattened field's fields in theirs)."""
    for name, info in model.model_fields.items():
        marker = cli_marker(info)
        if not marker.flatten:
            yield CliField((name,), info, marker)
            continue
        for sub, sub_info in _model_type(info).model_fields.items():
            yield CliField((name, sub), sub_info, marker.fields.get(sub) or cli_marker(sub_info))


def option_flag(name: str, info: FieldInfo) -> str:
    """The option of one (not flattened) field: ``--n``, ``--lambda``, ``--prompt-style``."""
    return CliField((name,), info, cli_marker(info)).flag


def option_dest(name: str, info: FieldInfo) -> str:
    """The parameter name a command receives one (not flattened) field's option as."""
    return CliField((name,), info, cli_marker(info)).dest


def _as_option(value: Any, marker: CliOption) -> Any:
    if not marker.multiple:
        return value
    if value is None:
        return ()
    if isinstance(value, Mapping | BaseModel):  # a model iterates (key, value)
        items = value.items() if isinstance(value, Mapping) else value
        return tuple(f"{key}={item}" for key, item in items)
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return (str(value),)


def cli_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """Each option's value when it is not given on the command line."""
    return {f.dest: _as_option(f.command_default, f.marker) for f in cli_fields(model)}


def cli_values(settings: BaseModel, fields: type[BaseModel]) -> dict[str, Any]:
    """The options ``settings`` sets among ``fields``' (the ones it leaves None or empty, and
    a flag it leaves off, are left out), as the command line would give them."""
    values: dict[str, Any] = {}
    for f in cli_fields(fields):
        value = f.value(settings)
        if value is None or value is False or value == {}:
            continue
        values[f.dest] = _as_option(value, f.marker)
    return values


def cli_given(settings: BaseModel, fields: type[BaseModel]) -> set[str]:
    """The options among ``fields``' that ``settings`` was given explicitly (the ones a saved
    profile must not override)."""
    return {f.dest for f in cli_fields(fields) if f.given(settings)}
