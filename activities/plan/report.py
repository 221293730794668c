"""``report.html`` for a plan run, from its run directory (``trace.jsonl`` and ``cost.json``).

The step table: each step's state, what it ran after (its caused-by steps), its attempts, the
gate verdicts or human decisions, the waits (pauses, with the reason) and its tokens; then the
whole trace. Rendered through the shared Jinja2 layout (autoescape on: model text is untrusted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from activities.reports import render_page

__all__ = ["StepRow", "plan_rows", "render_plan_report"]


@dataclass
class StepRow:
    step: str
    state: str = "pending"
    after: list[str] = field(default_factory=list)
    attempts: int = 0
    verdicts: list[str] = field(default_factory=list)
    waits: list[str] = field(default_factory=list)


def plan_rows(events: list[dict[str, Any]]) -> list[StepRow]:
    rows: dict[str, StepRow] = {}
    step_of_seq: dict[int, str] = {}

    def row(step: str) -> StepRow:
        return rows.setdefault(step, StepRow(step))

    for e in events:
        data, kind = e.get("data", {}), e.get("type", "")
        step = data.get("step")
        if not isinstance(step, str):
            continue
        step_of_seq[e["seq"]] = step
        r = row(step)
        if kind == "dispatched":
            r.attempts += 1
            r.state = "running"
            for cause in e.get("caused_by", []):
                before = step_of_seq.get(cause)
                if before and before != step and before not in r.after:
                    r.after.append(before)
        elif kind == "settled":
            r.state = "settled" if data.get("ok") else "failed"
        elif kind == "gate.verdict":
            r.verdicts.append(str(data.get("verdict")))
        elif kind == "gate.opened":
            r.state = "waiting"
        elif kind == "gate.decided":
            r.verdicts.append(str(data.get("decision")))
            r.state = "settled"
        elif kind == "paused":
            r.waits.append(str(data.get("state")))
        elif kind == "resumed" and r.state == "pending":
            r.state = "settled"
        elif kind == "step.failed":
            r.state = "failed"
    return list(rows.values())


def render_plan_report(run_dir: Path) -> str:
    events = [
        json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines() if line
    ]
    cost_path = run_dir / "cost.json"
    cost: dict[str, Any] = json.loads(cost_path.read_text()) if cost_path.exists() else {}
    closed: dict[str, Any] = next(
        (e["data"] for e in reversed(events) if e["type"] == "run.closed"), {}
    )
    outcome = str(cost.get("outcome") or closed.get("outcome") or "running")
    facts = [
        ("plan", str(cost.get("plan", ""))),
        ("status", outcome + (f" ({closed['reason']})" if closed.get("reason") else "")),
        ("invocations", str(cost.get("invocations", 0))),
        ("tokens", f"{cost.get('input_tokens', 0)} in, {cost.get('output_tokens', 0)} out"),
        ("usd", f"{cost.get('usd', 0.0):.4f}"),
        ("wall", f"{cost.get('wall_ms', 0) / 1000:.1f} s"),
    ]
    waivers = [e["data"].get("message", "") for e in events if e["type"] == "waiver"]
    facts += [("waiver", w) for w in waivers]
    steps = [
        {
            "step": r.step,
            "state": r.state,
            "after": ", ".join(r.after),
            "attempts": r.attempts,
            "verdicts": ", ".join(r.verdicts),
            "waits": ", ".join(r.waits),
        }
        for r in plan_rows(events)
    ]
    run_id = str(cost.get("run_id", run_dir.name))
    simulated = bool(cost.get("simulated"))
    return render_page(
        "plan.html",
        title=f"ponder plan {run_id}" + (" (simulated)" if simulated else ""),
        heading=f"Plan run {run_id}",
        facts=facts,
        fact_ids={"status": "status"},
        simulated=simulated,
        steps=steps,
        events=[
            {
                "seq": e["seq"],
                "type": e["type"],
                "caused_by": ", ".join(str(c) for c in e.get("caused_by", [])),
                "data": json.dumps(e.get("data", {}), ensure_ascii=False),
            }
            for e in events
        ],
        error=closed.get("error"),
    )
