"""``ponder plan``: validate a plan document and print the ``ponder-plan/1`` JSON Schema.

Nothing here runs a plan (``ponder plan run`` does, in ``client.plan_run_cli``).
Exit codes: 0 valid, 2 invalid (every error printed, one per line: ``path: [code] message``).
The validator and schema are imported when a command runs, so ``--help`` answers at once.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from client.validate_output import format_option

if TYPE_CHECKING:
    from activities.config import Settings
    from workflows.plan.validate import Validation

__all__ = ["plan"]


@click.group()
def plan() -> None:
    """Plans: validate, run and extend ponder-plan/1, loop-plan/1 and stratum flow documents."""


def _totals(result: Validation) -> dict[str, int | str]:
    from workflows.plan.boundaries import boundaries, flat, plan_totals

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
@format_option
@click.option(
    "--translated",
    is_flag=True,
    help="Print the ponder-plan/1 plan FILE runs as (a stratum flow's or loop-plan/1's "
    "translation) as JSON, then validate it.",
)
@click.pass_context
def validate(ctx: click.Context, file: str, fmt: str, translated: bool) -> None:
    """Validate FILE (JSON or YAML; - reads stdin) without running anything.

    Prints every error, one per line as `path: [code] message`; exit 2 when invalid, 0 when valid.
    A stratum flow (version: 1) is translated first; --translated (or --format json) shows it.
    """
    from client.documents import check_text, read_plan
    from client.validate_output import print_validation
    from workflows.plan.validate import Validation

    text, unreadable = read_plan(file)
    if text is None:
        result = Validation(None, None, [unreadable] if unreadable else [])
    else:
        root = ctx.find_root().obj or {}

        def settings() -> Settings:  # for a plan that names a tournament (a saved profile)
            from activities.config import load_settings

            return load_settings(root.get("config"))

        result, _ = check_text(text, None if file == "-" else file, settings)
    if translated:
        shown = result.translated
        if shown is None and result.plan is not None:
            shown = result.plan.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        if shown is not None:
            click.echo(json.dumps(shown, indent=2, ensure_ascii=False))
    extra: dict[str, Any] = {"form": result.form}
    if result.translated is not None:
        extra["translated"] = result.translated
    print_validation(
        file,
        fmt,
        result.ok,
        result.errors,
        summary=lambda: _summary(result),
        totals=lambda: _totals(result),
        notes=result.notes if result.ok else (),
        extra=extra,
    )


@plan.command()
def schema() -> None:
    """Print the JSON Schema of ponder-plan/1 (shape only; validate also checks the rules)."""
    from workflows.plan.schema import shipped_schema

    click.echo(shipped_schema(), nl=False)
