"""The command-line options declared on ``TournamentSettings`` and ``RunOptions``, as plain data.

Building those pydantic models costs more than the rest of ``ponder think --help`` together, so
the options' help, types and defaults ship as a generated table (``cli-options.json``) that
``client.click_fields`` turns into click options without importing pydantic. The models stay the
one home of the declarations: ``python -m client.option_table_gen`` regenerates the table from
them, and a test fails when the shipped table differs from what they generate now.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "OPTION_TABLE_FILE",
    "OptionKind",
    "OptionSpec",
    "help_constant",
    "option_table",
    "shipped_table",
]

OPTION_TABLE_FILE = "cli-options.json"

OptionKind = Literal["str", "int", "float", "choice", "flag", "multiple"]


@dataclass(frozen=True)
class OptionSpec:
    """One command-line option, as ``client.click_fields`` builds it."""

    flag: str
    """``--n``, ``--prompt-style``: the option on the command line."""
    dest: str
    """The parameter name the command receives the option as."""
    help: str
    kind: OptionKind
    default: Any = None
    """What the command applies when the option is left out (None: nothing)."""
    choices: tuple[str, ...] = ()
    low: int | float | None = None
    high: int | float | None = None
    metavar: str | None = None
    aliases: tuple[str, ...] = ()
    """Earlier flags of the option, still taken, hidden from ``--help``."""


def shipped_table() -> str:
    # Beside this module, read as a file: ``importlib.resources`` would cost every command the
    # import of its zip and temporary-file readers.
    return Path(__file__).with_name(OPTION_TABLE_FILE).read_text(encoding="utf-8")


@cache
def _loaded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(shipped_table())
    return data


@cache
def option_table(name: str) -> tuple[OptionSpec, ...]:
    """The options of table ``name`` (``TournamentSettings``, ``RunOptions``, ``ProfileRun``,
    ``RankOptions``, ``MutateOptions``), in field order."""
    return tuple(
        OptionSpec(
            **{
                **row,
                "choices": tuple(row.get("choices", ())),
                "aliases": tuple(row.get("aliases", ())),
            }
        )
        for row in _loaded()["tables"][name]
    )


def help_constant(name: str) -> Any:
    """A value a command's help shows that is declared beside the models (the built-in
    profiles' names, ...)."""
    return _loaded()["constants"][name]
