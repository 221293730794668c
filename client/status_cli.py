"""``ponder status``: a run's progress. An ended run in embedded mode is shown from its run store
rather than start a server and a worker to answer a query: a tournament's from the
``progress.json`` its last write left (the query's own answer, so the view is the same as the
server's, whether or not the embedded server is up: a query of an ended run replays its history
on a worker, about a second), any other kind's while the embedded server is down (what
``ponder runs`` knows of it, and its report). ``--live`` asks the server anyway, and any other
run goes to the server: over its HTTP API when the home's background worker runs the run
(``client.status_http``), else through the SDK (``client.status_query``).

This module imports no SDK, so that read answers at once.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from client.command_settings import command_settings
from client.embedded import EmbeddedServer
from client.run_states import ENDED
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from activities.config import Settings
    from workflows.tournament.progress import Progress

__all__ = ["ended_run_view", "ended_tournament_progress", "status"]


def ended_run_view(settings: Settings, run_id: str) -> dict[str, Any] | None:
    """The run store's view of a run that has ended, or None (not stored, or not ended)."""
    from client.run_list import store_row  # its pydantic rows: not for `ponder status --help`

    row = store_row(settings.runs_dir, run_id)
    if row is None or row.status not in ENDED:
        return None
    view: dict[str, Any] = row.model_dump(exclude={"on_server", "in_store", "parent"})
    run_dir = settings.runs_dir / run_id
    answer = run_dir / "artifacts" / "answer.txt"
    if answer.is_file():
        view["answer_path"] = str(answer)
    report = run_dir / "report.html"
    if report.is_file():
        view["report"] = str(report)
    view["source"] = "run store"
    return view


def ended_tournament_progress(
    settings: Settings, run_id: str
) -> tuple[Progress, datetime | None, datetime | None] | None:
    """An ended tournament's progress as its last write left it, with when the run started and
    ended; None when its directory holds none (another kind, or an older run) or it has not
    ended."""
    from client.run_list import checked_run_dir
    from workflows.tournament.progress import ENDED, Progress

    try:
        stored = json.loads(
            (checked_run_dir(settings.runs_dir, run_id) / "progress.json").read_text()
        )
        progress = Progress.model_validate(stored["progress"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if progress.status not in ENDED:
        return None
    return progress, _time(stored.get("started_at")), _time(stored.get("written_at"))


def _time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


@click.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the progress query as JSON.")
@click.option(
    "--live",
    is_flag=True,
    help="Ask the server even for an ended run (starts the embedded server if it is down).",
)
@click.pass_context
def status(ctx: click.Context, run_id: str, as_json: bool, live: bool) -> None:
    """Show a run's progress: status, phase, budget, leaderboard top 5 (or an Ask's answer)."""
    check_run_id(run_id)  # run.id_invalid (exit 2) before anything is touched
    settings = command_settings(ctx)
    # On a cluster (TEMPORAL_ADDRESS) the server is up already and is the record.
    from_store = not live and not settings.temporal_address
    ended = ended_tournament_progress(settings, run_id) if from_store else None
    if ended is not None:
        from client.tournament_display import print_progress, print_progress_json

        progress, started, ended_at = ended
        if as_json:
            print_progress_json(progress)
        else:
            print_progress(run_id, progress, started, ended_at)
            click.echo("source   run store")
        return
    # Any other kind: the store while the embedded server is down; a running one answers cheaply.
    down = from_store and not EmbeddedServer(settings.home).up()
    view = ended_run_view(settings, run_id) if down else None
    if view is None:
        from client.status_http import show_status_over_http

        if show_status_over_http(settings, run_id, as_json=as_json):
            return
        from client.status_query import show_status

        show_status(settings, run_id, as_json=as_json)
        return
    if as_json:
        click.echo(json.dumps(view, indent=2))
        return
    for key, value in view.items():
        if value is not None:
            shown = f"{value:.4f}" if isinstance(value, float) else value
            click.echo(f"{key.replace('_', ' '):<14} {shown}")
