"""Generate ``client/cli-options.json`` (``client.option_table``) from the models that declare
the options: ``python -m client.option_table_gen`` rewrites it; a test fails when it differs.

How a field reads as an option (its flag, help, type, bounds, default) is worked out here, from
the field and its ``CliOption`` marker (``client.option_fields``), so a field the command line
cannot take fails when the table is generated, naming the field.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from client.option_fields import CliField, cli_fields
from client.option_table import OPTION_TABLE_FILE, OptionSpec

__all__ = ["generate_table", "model_specs", "option_spec", "render_table"]


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


def _typed(info: FieldInfo) -> dict[str, Any]:
    kind, inner = _unwrapped(info.annotation)
    constraints = [*info.metadata, *inner]
    if get_origin(kind) is Literal:
        return {"kind": "choice", "choices": tuple(get_args(kind))}
    bounds = {
        "low": _bound(constraints, annotated_types.Ge, "ge"),
        "high": _bound(constraints, annotated_types.Le, "le"),
    }
    if kind is int:
        return {"kind": "int", **bounds}
    if kind is float:
        return {"kind": "float", **bounds}
    if kind is str:
        return {"kind": "str"}
    raise TypeError(f"no command-line type for {info.annotation}: give it a CliOption(multiple)")


def option_spec(field: CliField, where: str) -> OptionSpec:
    """The option of one field (``where`` names it in an error)."""
    info, marker = field.info, field.marker
    if not info.description:
        raise TypeError(f"{where} has no description: it is the option's help")
    help_text = " ".join(
        part
        for part in (info.description, marker.form, "Repeatable." if marker.multiple else None)
        if part
    )
    aliases = tuple("--" + alias for alias in marker.aliases)
    plain: dict[str, Any] = {
        "flag": field.flag,
        "dest": field.dest,
        "help": help_text,
        "aliases": aliases,
    }
    if marker.multiple:
        return OptionSpec(**plain, kind="multiple", metavar=marker.metavar)
    if field.is_flag:
        return OptionSpec(**plain, kind="flag")
    return OptionSpec(
        **plain, **_typed(info), default=field.command_default, metavar=marker.metavar
    )


def model_specs(
    model: type[BaseModel], fields: Iterable[CliField] | None = None
) -> list[OptionSpec]:
    chosen = cli_fields(model) if fields is None else fields
    return [option_spec(f, f"{model.__name__}.{'.'.join(f.path)}") for f in chosen]


def generate_table() -> dict[str, Any]:
    # The models' modules are imported here: importing this module builds none of them.
    from client.profiles import profile_run_fields
    from client.tournament_options import (
        MutateOptions,
        RankOptions,
        RunOptions,
        TournamentSettings,
    )
    from workflows.tournament.profiles import BUILTIN_PROFILES

    tables = {
        "TournamentSettings": model_specs(TournamentSettings),
        "RunOptions": model_specs(RunOptions),
        "ProfileRun": model_specs(RunOptions, profile_run_fields()),
        "RankOptions": model_specs(RankOptions),
        "MutateOptions": model_specs(MutateOptions),
    }
    return {
        "generated_by": "python -m client.option_table_gen (from the models: do not edit)",
        "tables": {
            name: [
                {k: v for k, v in dataclasses.asdict(spec).items() if v not in (None, ())}
                for spec in specs
            ]
            for name, specs in tables.items()
        },
        "constants": {
            "builtin_profiles": list(BUILTIN_PROFILES),
        },
    }


def render_table() -> str:
    return json.dumps(generate_table(), indent=2) + "\n"


if __name__ == "__main__":
    path = Path(__file__).with_name(OPTION_TABLE_FILE)
    path.write_text(render_table(), encoding="utf-8")
    sys.stdout.write(f"wrote {path}\n")
