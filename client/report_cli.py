"""``ponder report``: a run's report.html, re-rendered from its run directory. It reads the run
store alone (no server), and imports what renders a report only when it renders one."""

from __future__ import annotations

import json
from pathlib import Path

import click

from activities.errors import ConfigError
from client.command_settings import command_settings
from workflows.run_ids import check_run_id

__all__ = ["report"]


@click.command()
@click.argument("run_id")
@click.pass_context
def report(ctx: click.Context, run_id: str) -> None:
    """Print the path of a run's report.html (re-rendered from its run directory)."""
    from client.run_list import is_campaign_dir

    check_run_id(run_id)  # run.id_invalid (exit 2) before anything is touched
    settings = command_settings(ctx)
    if is_campaign_dir(settings.runs_dir / run_id):
        # What renders each kind is imported for it alone; a campaign's statistics come from
        # its summary (client.campaign_report).
        from client.campaign_report import rerender_report

        click.echo(str(rerender_report(settings, run_id)[0] / "report.html"))
        return
    from activities.run_file_crypto import read_run_text, run_dir_cipher
    from activities.run_store import RunStore

    run_dir = settings.runs_dir / check_run_id(run_id)
    store = RunStore(settings.runs_dir, cipher=run_dir_cipher(settings, run_dir))
    if (run_dir / "trace.jsonl").exists() and not (run_dir / "summary.json").exists():
        from activities.plan.report import render_plan_report  # a plan run

        click.echo(str(store.write(run_id, "report.html", render_plan_report(Path(run_dir)))))
        return
    try:
        summary = json.loads(read_run_text(run_dir / "summary.json"))
    except (OSError, ValueError):
        raise ConfigError(
            "run.not_found", f"no run artifacts in {run_dir}: check the run id"
        ) from None
    if "winner_id" not in summary:  # an Ask run: its answer and usage, no leaderboard
        from activities.ask_report import render_ask_report

        answer = run_dir / "artifacts/answer.txt"
        text = read_run_text(answer) if answer.exists() else None
        html = render_ask_report(summary, text)
    else:
        from activities.tournament.report import render_report, report_data_from_run_dir

        html = render_report(report_data_from_run_dir(Path(run_dir)))
    click.echo(str(store.write(run_id, "report.html", html)))
