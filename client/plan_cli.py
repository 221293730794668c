"""``ponder plan``: validate a plan document and print the ``ponder-plan/1`` JSON Schema.

Part 1 of plans: nothing here runs a plan (``ponder plan run`` comes with the PlanRun workflow).
Exit codes: 0 valid, 2 invalid (every error printed, one per line: ``path: [code] message``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from activities.config import Settings, load_settings
from activities.providers import default_model_for
from client.profiles import expand_saved_profiles
from workflows.plan.boundaries import boundaries, flat, plan_totals
from workflows.plan.document import parse_text
from workflows.plan.errors import PlanError
from workflows.plan.schema import shipped_schema
from workflows.plan.validate import Validation, validate_document, validate_text

__all__ = ["check_text", "plan"]

EXIT_INVALID = 2


@click.group()
def plan() -> None:
    """Plans: validate a ponder-plan/1 or loop-plan/1 document (running comes later)."""


def _read(file: str) -> tuple[str | None, PlanError | None]:
    try:
        if file == "-":
            return sys.stdin.read(), None
        return Path(file).read_text(encoding="utf-8"), None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, PlanError(
            "document.unreadable", "", f"cannot read {file}: {reason}; fix: check the path"
        )


def check_text(text: str, filename: str | None, settings: Settings) -> tuple[Validation, Any]:
    """The plan in ``text`` validated, with each tournament step's saved ``profile`` expanded
    into explicit fields first (client side: workers need no profile files); and the document."""
    raw, problems = parse_text(text, filename=filename)
    if problems:
        return validate_text(text, filename=filename), raw
    refused = expand_saved_profiles(raw, settings.home, lambda p: default_model_for(p, settings))
    if refused:
        errors = [PlanError("tournament.profile", path, str(exc)) for path, exc in refused]
        return Validation(None, None, errors), raw
    return validate_document(raw), raw


def _totals(result: Validation) -> dict[str, int | str]:
    assert result.plan is not None
    walk = boundaries(result.plan)
    totals = plan_totals(result.plan, walk)
    return {
        "name": result.plan.name,
        "steps": len(result.plan.steps),
        "boundaries": sum(1 for b in flat(walk) if b.kind != "run"),  # sub-flow children too
        "reserved_calls": totals.reserved_calls,
        "calls": totals.calls,
        "calls_cap": totals.calls_cap,
        "wall_ms": totals.wall_ms,
        "wall_cap_ms": totals.wall_cap_ms,
    }


def _summary(result: Validation) -> str:
    t = _totals(result)
    return (
        f"valid {result.form} plan {t['name']!r}: {t['steps']} steps, {t['boundaries']} "
        f"boundaries; worst case {t['reserved_calls']} invocations (plan budget {t['calls']} "
        f"calls, extension cap {t['calls_cap']}), wall ceiling {t['wall_ms']} ms"
    )


@plan.command()
@click.argument("file")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one object with the form, validity and every error.",
)
@click.pass_context
def validate(ctx: click.Context, file: str, fmt: str) -> None:
    """Validate FILE (JSON or YAML; - reads stdin) without running anything.

    Prints every error, one per line as `path: [code] message`; exit 2 when invalid, 0 when valid.
    """
    text, unreadable = _read(file)
    if text is None:
        result = Validation(None, None, [unreadable] if unreadable else [])
    else:
        root = ctx.find_root().obj or {}
        settings = load_settings(root.get("config"))
        result, _ = check_text(text, None if file == "-" else file, settings)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "file": file,
                    "form": result.form,
                    "valid": result.ok,
                    "errors": [e.as_dict() for e in result.errors],
                    "notes": result.notes,
                    "summary": _totals(result) if result.ok else None,
                },
                indent=2,
            )
        )
    elif result.ok:
        click.echo(f"{file}: {_summary(result)}")
        for note in result.notes:
            click.echo(f"{file}: note: {note}", err=True)
    else:
        for error in result.errors:
            click.echo(f"{file}: {error.line()}", err=True)
        click.echo(f"{file}: invalid, {len(result.errors)} error(s)", err=True)
    if not result.ok:
        # sys.exit, not ctx.exit: ponder runs click with standalone_mode=False, where a
        # ctx.exit code is returned and lost.
        sys.exit(EXIT_INVALID)


@plan.command()
def schema() -> None:
    """Print the JSON Schema of ponder-plan/1 (shape only; validate also checks the rules)."""
    click.echo(shipped_schema(), nl=False)
