"""``ponder status``: a run's progress. An ended run in embedded mode is shown from its run store
rather than start a server and a worker to answer a query (a query of an ended run replays its
history on a worker: one to two seconds): a tournament, plan or campaign from the
``progress.json`` its last write left (``workflows.progress_file``: the status query's own
answer), an Ask from its ``summary.json`` (``client.ask_view``), so the view is the server's,
field for field, whether or not the embedded server is up. Without those files (an older run,
another kind) the store's row is shown while the embedded server is down (what ``ponder runs``
knows of it, and its report). ``--live`` asks the server anyway, and any other run goes to the
server: over its HTTP API when the home's background worker runs the run
(``client.status_http``), else through the SDK (``client.status_query``).

This module imports no SDK, so that read answers at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from client.command_settings import command_settings
from client.embedded import EmbeddedServer
from client.run_states import ENDED
from workflows.progress_file import PROGRESS_FILE
from workflows.run_ids import check_run_id

if TYPE_CHECKING:
    from activities.config import Settings

__all__ = ["ended_run_view", "ended_view", "status"]


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


def ended_view(settings: Settings, run_id: str, *, as_json: bool) -> Callable[[], None] | None:
    """How to print an ended run's own view from its run store, or None when the store holds
    none (the run has not ended, is of another kind, or was written before these files)."""
    from activities.run_file_crypto import read_run_text
    from client.run_list import checked_run_dir

    run_dir = checked_run_dir(settings.runs_dir, run_id)
    try:
        stored = json.loads(read_run_text(run_dir / PROGRESS_FILE))
        kind, progress = stored.get("kind", "tournament"), stored["progress"]
    except FileNotFoundError:
        return _ended_ask(run_dir, as_json=as_json)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    try:
        if kind == "tournament":
            return _ended_tournament(run_id, stored, progress, as_json=as_json)
        if kind == "plan":
            return _ended_plan(settings, progress, as_json=as_json)
        if kind == "campaign":
            return _ended_campaign(progress, as_json=as_json)
    except ValueError:  # pydantic's ValidationError: a file this version cannot read
        return None
    return None


def _time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _from_store(show: Callable[[], None], *, as_json: bool) -> Callable[[], None]:
    def printed() -> None:
        show()
        if not as_json:
            click.echo("source   run store")

    return printed


def _ended_tournament(
    run_id: str, stored: dict[str, Any], progress: Any, *, as_json: bool
) -> Callable[[], None] | None:
    from client.tournament_display import print_progress, print_progress_json
    from workflows.tournament.progress import ENDED, Progress

    shown = Progress.model_validate(progress)
    if shown.status not in ENDED:
        return None
    if as_json:
        return lambda: print_progress_json(shown)
    started, written = _time(stored.get("started_at")), _time(stored.get("written_at"))
    return _from_store(lambda: print_progress(run_id, shown, started, written), as_json=False)


def _ended_plan(settings: Settings, progress: Any, *, as_json: bool) -> Callable[[], None] | None:
    from client.plan_display import print_plan_status
    from workflows.plan.status import PlanStatus

    shown = PlanStatus.model_validate(progress)
    if shown.state not in ENDED:
        return None
    return _from_store(
        lambda: print_plan_status(shown, as_json=as_json, settings=settings), as_json=as_json
    )


def _ended_campaign(progress: Any, *, as_json: bool) -> Callable[[], None] | None:
    from client.campaign_display import print_status
    from workflows.campaign.progress import CampaignProgress

    shown = CampaignProgress.model_validate(progress)
    if shown.status not in ENDED:
        return None
    return _from_store(lambda: print_status(shown, as_json=as_json), as_json=as_json)


def _ended_ask(run_dir: Path, *, as_json: bool) -> Callable[[], None] | None:
    from client.ask_view import print_ask_view, stored_ask_view

    view = stored_ask_view(run_dir)
    if view is None:
        return None
    return _from_store(lambda: print_ask_view(view, as_json=as_json), as_json=as_json)


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
    show = ended_view(settings, run_id, as_json=as_json) if from_store else None
    if show is not None:
        show()
        return
    # No stored view (an older run, or not ended): the store's row while the embedded server is
    # down; else the server, over HTTP when the home's worker serves the run, else the SDK.
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
