"""``ponder export ID --format json|jsonl|markdown``: one run as a portable bundle (the bundle
itself is ``client.bundles``)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import click

from client.bundles import Format, bundle, render
from client.command_settings import command_settings

__all__ = ["export"]


@click.command()
@click.argument("run_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(get_args(Format)),
    default="json",
    show_default=True,
    help="json: one document; jsonl: one record a line; markdown: for people.",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), default=None, help="File (default stdout)."
)
@click.pass_context
def export(ctx: click.Context, run_id: str, fmt: Format, output: str | None) -> None:
    """Write one run as a portable bundle (json, jsonl or markdown); secrets never included."""
    settings = command_settings(ctx)
    text = render(bundle(settings, run_id), fmt)
    if output is None:
        click.echo(text, nl=False)
        return
    Path(output).write_text(text)
    click.echo(output, err=True)
