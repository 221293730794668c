"""What ``ponder status`` shows of an Ask run, whether read from the server or from the run store.

An Ask has no status query: the server's view is its description and result
(``client.status_query``), the store's its ``summary.json`` (``client.status_cli``). Both build
the view here, so they show the same fields in the same order. ``ponder ask`` prints its answer
here too, whether the SDK or the server's HTTP API (``client.ask_http``) awaited it. No SDK
import.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from workflows.ask_types import AskResult

__all__ = ["ask_view", "print_answer", "print_ask_view", "stored_ask_view"]


def ask_view(
    run_id: str,
    status: str,
    started: datetime | None,
    ended: datetime | None,
    *,
    answered_by: str | None = None,
    simulated: bool = False,
    usage: dict[str, Any] | None = None,
    usd: float | None = None,
    answer_path: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The view: state and elapsed time, then the answer's model, usage and path (an answered
    run) or the error (a failed or cancelled one)."""
    view: dict[str, Any] = {"run_id": run_id, "kind": "ask", "status": status}
    if started is not None and ended is not None:
        view["elapsed_s"] = round((ended - started).total_seconds(), 1)
    if answered_by is not None:
        usage = usage or {}
        view |= {
            "model": answered_by,
            "simulated": simulated,
            "input_tokens": usage.get("input_tokens", 0),
            "output_tokens": usage.get("output_tokens", 0),
            # No price known: the cost is unknown, not zero.
            "usd": "unknown" if usd is None and not simulated else usd,
            "answer_path": answer_path,
        }
    if error is not None:
        view["error"] = error
    return view


def stored_ask_view(run_dir: Path) -> dict[str, Any] | None:
    """The view of an Ask that has ended, from its ``summary.json``; None when the directory
    holds no such summary (another kind, a run cancelled before its call, or one written before
    summaries carried their start time)."""
    from activities.run_file_crypto import read_run_text

    try:
        summary = json.loads(read_run_text(run_dir / "summary.json"))
        run_id, status = summary["run_id"], summary["status"]
        started = datetime.fromisoformat(summary["started_at"])
        ended = datetime.fromisoformat(summary["completed_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if status == "completed" and isinstance(summary.get("answered_by"), str):
        answer = run_dir / "artifacts" / "answer.txt"
        return ask_view(
            run_id,
            status,
            started,
            ended,
            answered_by=summary["answered_by"],
            simulated=bool(summary.get("simulated")),
            usage=summary.get("usage"),
            usd=summary.get("usd"),
            answer_path=str(answer),
        )
    if status == "failed" and isinstance(summary.get("error"), str):
        return ask_view(run_id, status, started, ended, error=summary["error"])
    return None


def print_ask_view(view: dict[str, Any], *, as_json: bool) -> None:
    """Plain lines, never a table cell: the answer's path is printed whole (a table cut it with
    "…" in a narrow terminal), so it can be copied."""
    if as_json:
        click.echo(json.dumps(view, indent=2))
        return
    for key, value in view.items():
        if value is None:
            continue
        if key == "usd" and isinstance(value, float):
            value = f"{value:.4f}"
        click.echo(f"{key.replace('_', ' '):<14} {value}")


def print_answer(result: AskResult) -> None:
    """What ``ponder ask`` prints of its answer, however the run was started and awaited: the
    text on stdout, one line of who answered, at what cost and where it is kept on stderr."""
    click.echo(result.response.text)
    usage = result.response.usage
    label = " (simulated)" if result.response.simulated else ""
    click.echo(
        f"-- run {result.run_id}: {result.response.provider}:{result.response.model}{label}, "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens, "
        f"{result.response.latency_ms:.0f} ms; answer in {result.answer_path}",
        err=True,
    )
