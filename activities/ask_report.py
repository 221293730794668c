"""The page of an Ask run (``ponder report`` of one): its model, usage and answer, or its error.
Apart from the tournament report so that rendering it imports no tournament types."""

from __future__ import annotations

from typing import Any

from activities.reports import render_page

__all__ = ["render_ask_report"]


def render_ask_report(summary: dict[str, Any], answer: str | None) -> str:
    """The page of an Ask run: its model, usage and answer (or error)."""
    usage = summary.get("usage") or {}
    usd = summary.get("usd")
    facts = [
        ("status", str(summary.get("status", "unknown"))),
        ("model", str(summary.get("model", "–"))),
        ("tokens", f"{usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out"),
        ("cost", "unknown" if usd is None else f"${usd:.4f}"),
        ("completed", str(summary.get("completed_at") or "–")),
    ]
    run_id = str(summary.get("run_id", ""))
    return render_page(
        "ask.html",
        title=f"ponder ask {run_id}",
        heading=f"Ask {run_id}",
        facts=facts,
        fact_ids={"status": "status"},
        simulated=bool(summary.get("simulated")),
        answer=answer,
        error=summary.get("error"),
    )
