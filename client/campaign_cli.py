"""``ponder campaign``: validate a ``ponder-campaign/1`` document, run it, read its report.

Exit codes: 0 valid / completed (or detached), 1 failed or cancelled, 2 invalid input (every
error printed, one per line: ``path: [code] message``), 75 paused awaiting budget.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from workflows.campaign.configs import cell_calls, config_errors
from workflows.campaign.document import Validation, validate_text
from workflows.campaign.errors import CampaignError

__all__ = ["campaign", "load"]

EXIT_INVALID = 2


@click.group()
def campaign() -> None:
    """Campaigns: variants x scenarios x seeds, ending in a report that says what to promote."""


def load(file: str) -> Validation:
    """The document in FILE (``-`` reads stdin), validated as the workflow will."""
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Validation(
            None,
            [CampaignError("document.unreadable", "", f"cannot read {file}: {reason}")],
        )
    result = validate_text(text, filename=None if file == "-" else file)
    if result.document is not None and not result.errors:
        result.errors += config_errors(result.document)
    return result


def summary(result: Validation) -> str:
    doc = result.document
    assert doc is not None
    cells = len(doc.variants) * len(doc.scenarios) * len(doc.seeds)
    calls = sum(cell_calls(v, s) for v in doc.variants for s in doc.scenarios) * len(doc.seeds)
    return (
        f"valid campaign {doc.campaign_id!r}: {len(doc.variants)} variants x "
        f"{len(doc.scenarios)} scenarios x {len(doc.seeds)} seeds = {cells} cells, "
        f"worst case {calls} model calls; comparator {doc.comparator_id}, split {doc.split}"
    )


def fail_invalid(file: str, result: Validation) -> None:
    for error in result.errors:
        click.echo(f"{file}: {error.line()}", err=True)
    click.echo(f"{file}: invalid, {len(result.errors)} error(s)", err=True)
    # sys.exit, not ctx.exit: ponder runs click with standalone_mode=False.
    sys.exit(EXIT_INVALID)


@campaign.command()
@click.argument("file")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one object with validity and every error.",
)
def validate(file: str, fmt: str) -> None:
    """Validate FILE (JSON or YAML; - reads stdin) without running anything.

    Prints every error as `path: [code] message`; exit 2 when invalid, 0 when valid.
    """
    result = load(file)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "file": file,
                    "valid": result.ok,
                    "errors": [e.as_dict() for e in result.errors],
                    "summary": summary(result) if result.ok else None,
                },
                indent=2,
            )
        )
        if not result.ok:
            sys.exit(EXIT_INVALID)
    elif result.ok:
        click.echo(f"{file}: {summary(result)}")
    else:
        fail_invalid(file, result)
