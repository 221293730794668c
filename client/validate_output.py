"""``ponder plan validate`` and ``ponder campaign validate`` print through here: one ``--format``
option, one text form (every error a line, ``path: [code] message``) and one JSON form.

Exit 0 valid, 2 invalid. ``sys.exit``, not ``ctx.exit``: ponder runs click with
``standalone_mode=False``, where a ``ctx.exit`` code is returned and lost.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import click

from client.exit_codes import EXIT_USAGE
from workflows.coded_errors import CodedError

__all__ = ["format_option", "print_invalid", "print_validation"]

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one object with validity and every error.",
)


def print_invalid(file: str, errors: Sequence[CodedError]) -> NoReturn:
    """Every error of FILE on stderr, then the count; exit 2."""
    for error in errors:
        click.echo(f"{file}: {error.line()}", err=True)
    click.echo(f"{file}: invalid, {len(errors)} error(s)", err=True)
    sys.exit(EXIT_USAGE)


def print_validation(
    file: str,
    fmt: str,
    ok: bool,
    errors: Sequence[CodedError],
    *,
    summary: Callable[[], str],
    totals: Callable[[], Any],
    notes: Sequence[str] = (),
    extra: dict[str, Any] | None = None,
) -> None:
    """A validation of FILE: ``summary()`` (text) or ``totals()`` (JSON) when it is valid, every
    error when not (then exit 2). ``extra`` adds keys to the JSON object (a plan's form)."""
    if fmt == "json":
        out = {"file": file, **(extra or {}), "valid": ok, "errors": [e.as_dict() for e in errors]}
        if notes or extra is not None:
            out["notes"] = list(notes)
        out["summary"] = totals() if ok else None
        click.echo(json.dumps(out, indent=2))
        if not ok:
            sys.exit(EXIT_USAGE)
        return
    if not ok:
        print_invalid(file, errors)
    click.echo(f"{file}: {summary()}")
    for note in notes:
        click.echo(f"{file}: note: {note}", err=True)
