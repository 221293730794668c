"""``ponder top``: a live view of a server for an operator (the numbers: ``client.top_frame``).

Runs by state and kind come from the server's visibility list of this configuration's task
queue, joined with the run store as ``ponder runs`` does (a plan waiting for a person is
RUNNING to Temporal); the oldest waiting pause from the plan runs' traces in the run store;
the backlog from the server's task queue stats; calls and spend per provider from a worker's
Prometheus endpoint when ``--metrics URL`` is given.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from client.command_settings import command_settings
from client.run_states import ENDED

if TYPE_CHECKING:
    from rich.console import RenderableType
    from temporalio.client import Client

    from activities.config import Settings
    from client.top_frame import Frame, Pause, Scrape

__all__ = ["top"]

_QUEUE_TYPES = {"workflow": 1, "activity": 2}  # TaskQueueType's numbers


def _queue_clause(task_queue: str) -> str:
    from activities.errors import ConfigError
    from client.top_frame import queue_literal

    literal = queue_literal(task_queue)
    if literal is None:
        raise ConfigError(
            "config.invalid",
            f"task_queue {task_queue!r}: ponder top finds a queue's runs in the server's "
            "visibility list, which cannot match an empty name or one holding a double quote, "
            "a backslash or a control character, or starting or ending with a single quote: "
            "run the worker on a queue named without them (PONDER_TASK_QUEUE, or task_queue "
            "in ponder.toml)",
        )
    return f"TaskQueue = {literal}"


async def _runs(client: Client, settings: Settings) -> list[Any]:
    from client import run_list

    query = f"{run_list._SERVER_QUERY} AND {_queue_clause(settings.task_queue)}"
    server = [
        run_list._server_row(w.id, w.workflow_type, run_list.state_name(w.status), w.start_time)
        async for w in client.list_workflows(query, limit=run_list.SERVER_LIST_LIMIT)
    ]
    store = await asyncio.to_thread(run_list.store_rows, settings.runs_dir)
    said = {row.run_id: row.status for row in store}
    rows = []
    # The server's runs on this queue only (the run store also holds other queues' runs), in
    # the store's words while Temporal says RUNNING: a plan waiting for a person, a budget.
    for row in run_list.merge(store, server):
        if not row.on_server:
            continue
        stored = said.get(row.run_id)
        if row.status == "running" and stored is not None and stored not in (*ENDED, "running"):
            row = row.model_copy(update={"status": stored})
        rows.append(row)
    return rows


async def _backlog(client: Client, settings: Settings) -> dict[str, int]:
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    backlog = {}
    for name, number in _QUEUE_TYPES.items():
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=settings.namespace,
                task_queue=TaskQueue(name=settings.task_queue),
                task_queue_type=number,  # type: ignore[arg-type]
                report_stats=True,
            )
        )
        backlog[name] = int(described.stats.approximate_backlog_count)
    return backlog


def _pauses(runs_dir: Path, run_ids: list[str], now: datetime) -> list[Pause]:
    from activities.run_file_crypto import read_run_text
    from client.top_frame import open_waits

    pauses = []
    for run_id in run_ids:
        try:
            lines = read_run_text(runs_dir / run_id / "trace.jsonl").splitlines()
        except OSError:
            continue
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line being written
            if isinstance(event, dict):
                events.append(event)
        pauses.extend(open_waits(run_id, events, now))
    return pauses


async def _scrape(url: str) -> Scrape:
    import httpx

    from client.top_frame import Scrape, provider_totals

    async with httpx.AsyncClient(timeout=5.0) as http:
        response = await http.get(url)
    response.raise_for_status()
    return Scrape(time.monotonic(), provider_totals(response.text))


async def _frame(
    client: Client, settings: Settings, metrics: str | None, scrapes: list[Scrape]
) -> Frame:
    from client.top_frame import WINDOW_S, Frame, oldest_pause, provider_rates, runs_by_state

    rows = await _runs(client, settings)
    frame = Frame(
        runs=runs_by_state((r.kind, r.status) for r in rows),
        backlog=await _backlog(client, settings),
        task_queue=settings.task_queue,
    )
    plans = [r.run_id for r in rows if r.kind == "plan" and r.status not in ENDED]
    found = await asyncio.to_thread(_pauses, settings.runs_dir, plans, datetime.now(UTC))
    frame.oldest_pause = oldest_pause(found)
    if metrics is not None:
        scrapes.append(await _scrape(metrics))
        del scrapes[: -int(WINDOW_S * 4)]  # bounded, whatever the interval
        frame.providers, frame.window_s = provider_rates(scrapes)
    return frame


def _render(frame: Frame) -> RenderableType:
    from rich.console import Group
    from rich.table import Table

    runs = Table(title="runs", expand=False)
    runs.add_column("state")
    kinds = sorted({k for by_kind in frame.runs.values() for k in by_kind})
    for kind in kinds:
        runs.add_column(kind, justify="right")
    runs.add_column("total", justify="right")
    for state, by_kind in frame.runs.items():
        cells = [str(by_kind.get(k, 0)) for k in kinds]
        runs.add_row(state, *cells, str(sum(by_kind.values())))
    if not frame.runs:
        runs.add_row("none", "0")
    parts: list[Any] = [f"task queue {frame.task_queue}", runs]
    if frame.providers is None:
        parts.append("calls and spend: not measured (give --metrics URL, a worker's endpoint)")
    else:
        calls = Table(title=f"calls over the last {frame.window_s:.0f} s")
        calls.add_column("provider")
        calls.add_column("calls/s", justify="right")
        calls.add_column("USD/min", justify="right")
        for rate in frame.providers:
            calls.add_row(rate.provider, f"{rate.calls_per_s:.2f}", f"{rate.usd_per_min:.4f}")
        parts.append(calls)
    pause = frame.oldest_pause
    parts.append(
        "oldest waiting pause: none"
        if pause is None
        else f"oldest waiting pause: {pause.run_id} step {pause.step} ({pause.waiting_for}), "
        f"waiting {pause.waited_s:.0f} s"
    )
    parts.append(
        "backlog: " + ", ".join(f"{name} {count}" for name, count in frame.backlog.items())
    )
    return Group(*parts)


@click.command("top")
@click.option("--once", is_flag=True, help="Print one frame and exit (for scripts).")
@click.option("--json", "as_json", is_flag=True, help="With --once: print the frame as JSON.")
@click.option(
    "--metrics",
    default=None,
    metavar="URL",
    help="A worker's Prometheus endpoint (--metrics-bind): calls and spend per provider.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.2),
    default=1.0,
    show_default=True,
    help="Seconds between frames (with --once and --metrics: between the two scrapes).",
)
@click.pass_context
def top(
    ctx: click.Context, once: bool, as_json: bool, metrics: str | None, interval: float
) -> None:
    """Watch a server: runs by state, calls and spend per provider, pauses, backlog."""
    if as_json and not once:
        raise click.UsageError("--json prints one frame: give --once with it")
    settings = command_settings(ctx)
    _queue_clause(settings.task_queue)  # refused before the server is reached

    async def go() -> None:
        from client.consoles import text_console
        from client.live import live_panel
        from client.session import open_session

        scrapes: list[Scrape] = []
        async with open_session(settings, worker=False) as session:
            client, active = session.client, session.settings
            if once:
                if metrics is not None:  # a rate needs two readings
                    scrapes.append(await _scrape(metrics))
                    await asyncio.sleep(interval)
                frame = await _frame(client, active, metrics, scrapes)
                if as_json:
                    click.echo(json.dumps(asdict(frame), indent=2))
                else:
                    text_console().print(_render(frame))
                return
            console = text_console()
            with live_panel(console, auto_refresh=False) as live:
                try:
                    while True:
                        live.update(_render(await _frame(client, active, metrics, scrapes)))
                        live.refresh()
                        await asyncio.sleep(interval)
                except asyncio.CancelledError:
                    # Ctrl-C: the last frame stays, and its line is ended. SIGTERM still
                    # ends the command as every command ends on it.
                    from client.sigterm import terminated

                    if terminated():
                        raise

    try:
        asyncio.run(go())
    except KeyboardInterrupt:
        return  # Ctrl-C is how a live view ends
