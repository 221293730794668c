"""``report.html`` for a plan run, from its run directory.

Read: ``trace.jsonl`` (every event), ``cost.json`` (the run's row), and when present
``graph.json`` (the plan's steps, deps and current states), ``calls.jsonl`` (one row per
invocation), ``args.json`` (the run's arguments) and ``outputs.json`` (each step's output).
Shown: the run's arguments (and which a resume gave), the step graph (steps in columns by
depth, each with its state, attempts and cost), the step table (state, what it runs after,
attempts, gate verdicts and human decisions, waits with how long they lasted, model calls, a
tournament step's child calls and its report included, tokens, USD), every wait and gate
decision (who decided and when), each step's output, then the whole trace. Written by the run
itself at every wait and when it ends; ``ponder report ID`` re-renders it. Rendered through the
shared Jinja2 layout (autoescape on: model text is untrusted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from activities.reports import PREVIEW_CHARS, render_page
from activities.run_file_crypto import read_run_text

__all__ = [
    "OUTPUT_PREVIEW_CHARS",
    "StepRow",
    "WaitRow",
    "plan_rows",
    "plan_waits",
    "render_plan_report",
]

OUTPUT_PREVIEW_CHARS = PREVIEW_CHARS
"""Each step's output is shown up to this many characters; ``outputs.json`` holds it whole."""


@dataclass
class StepRow:
    step: str
    kind: str = ""
    title: str = ""
    state: str = "pending"
    after: list[str] = field(default_factory=list)
    region: str | None = None
    attempts: int = 0
    verdicts: list[str] = field(default_factory=list)
    waits: list[str] = field(default_factory=list)
    calls: int = 0
    """Model calls: a tournament step's child calls, or 1 per invocation of any other step."""
    invocations: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    unpriced: int = 0
    models: list[str] = field(default_factory=list)
    level: int = 0
    child_runs: list[str] = field(default_factory=list)
    """A tournament step's child run ids (their reports sit beside this run's directory)."""


@dataclass
class WaitRow:
    """One wait for a person (a human gate, a pause, a budget pause) and how it ended."""

    step: str
    kind: str  # gate | pause | budget
    what: str
    opened: str
    closed: str = ""
    waited: str = ""
    outcome: str = "waiting"
    by: str = ""


def _waited(e: dict[str, Any], start: str | None) -> str:
    """How long a wait lasted: the run's own ``waited_ms`` when recorded, else from the
    timestamps of the events that opened and closed it."""
    waited = e.get("data", {}).get("waited_ms")
    if isinstance(waited, int | float):
        return f" {waited / 1000:.1f} s"
    return _seconds(start, e.get("ts"))


def _seconds(start: str | None, end: str | None) -> str:
    try:
        if start is None or end is None:
            return ""
        delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:
        return ""
    return f" {delta.total_seconds():.1f} s"


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in read_run_text(path).splitlines() if line.strip()]


def plan_rows(
    events: list[dict[str, Any]],
    graph: list[dict[str, Any]] | None = None,
    calls: list[dict[str, Any]] | None = None,
) -> list[StepRow]:
    """One row per step: the graph's steps in plan order (then any the trace names besides)."""
    rows: dict[str, StepRow] = {}
    for node in graph or []:
        r = rows.setdefault(node["id"], StepRow(node["id"]))
        r.kind, r.title = str(node.get("kind", "")), str(node.get("title") or "")
        r.after = [str(d) for d in node.get("deps", [])]
        for member in node.get("chain", []):
            rows.setdefault(member, StepRow(member)).region = r.step
    known = {node["id"] for node in graph or []}
    step_of_seq: dict[int, str] = {}
    opened: dict[str, str] = {}  # step -> ts of the wait it is in

    def row(step: str) -> StepRow:
        return rows.setdefault(step, StepRow(step))

    for e in events:
        data, kind = e.get("data", {}), e.get("type", "")
        step = data.get("step")
        if not isinstance(step, str):
            continue
        step_of_seq[e["seq"]] = step
        r = row(step)
        if kind == "dispatched" and data.get("phase") == "judged":
            r.verdicts.append("judged")  # a judged ensure's model call, not an attempt
        elif kind == "dispatched":
            r.attempts += 1
            r.state = "running"
            for cause in e.get("caused_by", []):
                before = step_of_seq.get(cause)
                if step not in known and before and before != step and before not in r.after:
                    r.after.append(before)  # no graph: what it ran after, from the trace
        elif kind == "settled":
            r.state = "settled" if data.get("ok") else "failed"
            if isinstance(data.get("child_run"), str) and data["child_run"] not in r.child_runs:
                r.child_runs.append(data["child_run"])
        elif kind == "gate.verdict":
            r.verdicts.append(str(data.get("verdict")))
        elif kind == "gate.opened":
            r.state = "waiting"
            opened[step] = e.get("ts", "")
        elif kind == "gate.decided":
            r.verdicts.append(str(data.get("decision")))
            r.waits.append("gate" + _waited(e, opened.pop(step, None)))
            r.state = "settled"
        elif kind == "paused":
            r.waits.append(str(data.get("state")))
            opened[step] = e.get("ts", "")
        elif kind == "resumed":
            if r.waits:
                r.waits[-1] += _waited(e, opened.pop(step, None))
            if r.state == "pending":
                r.state = "settled"
        elif kind == "step.failed":
            r.state = "failed"
    for node in graph or []:  # the run's own step states win over what the trace suggests
        if node.get("state"):
            rows[node["id"]].state = str(node["state"])
    for call in calls or []:
        r = row(str(call.get("step", "")))
        r.invocations += 1
        r.calls += int(call.get("model_calls") or 1)
        r.failed_calls += call.get("outcome", "ok") != "ok"
        r.input_tokens += int(call.get("input_tokens") or 0)
        r.output_tokens += int(call.get("output_tokens") or 0)
        r.usd += float(call.get("usd") or 0.0)
        r.unpriced += not call.get("priced", True)
        if call.get("model") and call["model"] not in r.models:
            r.models.append(str(call["model"]))
    for r in rows.values():  # depth: after every dep (deps point earlier); members in a region
        parents = [rows[d].level for d in r.after if d in rows and d != r.step]
        if r.region in rows:
            parents.append(rows[r.region].level)
        r.level = 1 + max(parents) if parents else 0
    return list(rows.values())


def plan_waits(events: list[dict[str, Any]]) -> list[WaitRow]:
    """Every wait for a person in the order it opened: a human gate (its decision, who made
    it and when), a pause (the argument that answered it), a budget pause (the extension)."""
    waits: list[WaitRow] = []
    open_at: dict[str, WaitRow] = {}  # step -> its open wait
    for e in events:
        data, kind, ts = e.get("data", {}), e.get("type", ""), str(e.get("ts", ""))
        step = data.get("step")
        if not isinstance(step, str):
            continue
        if kind == "gate.opened":
            what = f"round {data.get('round', 0)}"
            if data.get("deadline_at"):
                what += f", deadline {data['deadline_at']} then {data.get('default')}"
            open_at[step] = WaitRow(step, "gate", what, ts)
            waits.append(open_at[step])
        elif kind == "paused":
            resume_arg = data.get("resume_arg")
            what = str(data.get("state", ""))
            if resume_arg:
                what += f" (resume_arg {resume_arg})"
            elif data.get("need"):
                what += f": {data['need']}"
            open_at[step] = WaitRow(step, "pause" if resume_arg else "budget", what, ts)
            waits.append(open_at[step])
        elif kind in ("gate.decided", "resumed") and step in open_at:
            w = open_at.pop(step)
            w.closed, w.waited = ts, _waited(e, w.opened).strip()
            if kind == "gate.decided":
                w.outcome = str(data.get("decision"))
                w.by = str(data.get("decided_by") or "a person (unnamed)")
            else:
                w.outcome = "resumed" if w.kind == "pause" else "limits extended"
    return waits


def _args(run_dir: Path, events: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The run's arguments, each with where it came from: the start, or a resume (when)."""
    path = run_dir / "args.json"
    args: dict[str, Any] = json.loads(read_run_text(path)) if path.exists() else {}
    given: dict[str, str] = {}
    for e in events:
        if e.get("type") == "resume.accepted":
            for key in e.get("data", {}).get("keys", []):
                given.setdefault(str(key), f"resume at {e.get('ts', '')}")
    return [
        {
            "key": key,
            "value": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False),
            "source": given.get(key, "start"),
        }
        for key, value in args.items()
    ]


def _outputs(run_dir: Path, rows: list[StepRow]) -> list[dict[str, Any]]:
    """Each step's output in plan order, cut at ``OUTPUT_PREVIEW_CHARS`` (whole in the file)."""
    path = run_dir / "outputs.json"
    outputs: dict[str, Any] = json.loads(read_run_text(path)) if path.exists() else {}
    order = [r.step for r in rows] + [s for s in outputs if s not in {r.step for r in rows}]
    shown = []
    for step in (s for s in order if s in outputs):
        value = outputs[step]
        text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
        shown.append(
            {
                "step": step,
                "text": text[:OUTPUT_PREVIEW_CHARS],
                "chars": len(text),
                "cut": len(text) > OUTPUT_PREVIEW_CHARS,
            }
        )
    return shown


def _usd(usd: float, unpriced: int) -> str:
    """USD, or unknown when a call's model has no price (never shown as free)."""
    if unpriced:
        return f"unknown ({unpriced} unpriced call{'s' if unpriced != 1 else ''}; priced {usd:.4f})"
    return f"{usd:.4f}"


def _cost(r: StepRow) -> str:
    if not r.calls:
        return ""
    calls = f"{r.calls} call{'s' if r.calls != 1 else ''}, "
    return calls + f"{r.input_tokens} in, {r.output_tokens} out, USD {_usd(r.usd, r.unpriced)}"


def _calls(r: StepRow) -> str:
    """Model calls, with the invocations that made them when they differ (a tournament)."""
    if r.calls == r.invocations:
        return str(r.calls)
    return f"{r.calls} ({r.invocations} invocation{'s' if r.invocations != 1 else ''})"


def render_plan_report(run_dir: Path) -> str:
    events = _read_jsonl(run_dir / "trace.jsonl")
    cost_path, graph_path = run_dir / "cost.json", run_dir / "graph.json"
    cost: dict[str, Any] = json.loads(read_run_text(cost_path)) if cost_path.exists() else {}
    graph = json.loads(read_run_text(graph_path))["steps"] if graph_path.exists() else None
    closed: dict[str, Any] = next(
        (e["data"] for e in reversed(events) if e["type"] == "run.closed"), {}
    )
    outcome = str(cost.get("outcome") or closed.get("outcome") or "running")
    facts = [
        ("plan", str(cost.get("plan", ""))),
        ("status", outcome + (f" ({closed['reason']})" if closed.get("reason") else "")),
        # Model calls, a tournament step's child calls included (older cost.json: invocations).
        ("calls", str(cost.get("calls", cost.get("invocations", 0)))),
        ("invocations", str(cost.get("invocations", 0))),
        ("tokens", f"{cost.get('input_tokens', 0)} in, {cost.get('output_tokens', 0)} out"),
        ("usd", _usd(float(cost.get("usd", 0.0)), int(cost.get("unpriced_invocations", 0)))),
        ("wall", f"{cost.get('wall_ms', 0) / 1000:.1f} s charged"),
        ("waited", f"{cost.get('waited_ms', 0) / 1000:.1f} s for a person (not charged to wall)"),
        ("elapsed", f"{cost.get('elapsed_ms', cost.get('wall_ms', 0)) / 1000:.1f} s"),
    ]
    if closed.get("route"):
        facts.append(("route", f"terminal:{closed['route']}"))
    waivers = [e["data"].get("message", "") for e in events if e["type"] == "waiver"]
    facts += [("waiver", w) for w in waivers]
    rows = plan_rows(events, graph, _read_jsonl(run_dir / "calls.jsonl"))
    steps = [
        {
            "step": r.step,
            "kind": r.kind,
            "title": r.title,
            "state": r.state,
            "after": ", ".join(r.after),
            "region": r.region or "",
            "attempts": r.attempts,
            "verdicts": ", ".join(r.verdicts),
            "waits": ", ".join(r.waits),
            "calls": _calls(r),
            "failed_calls": r.failed_calls,
            "child_runs": r.child_runs,
            "tokens": f"{r.input_tokens} in, {r.output_tokens} out" if r.calls else "",
            "usd": _usd(r.usd, r.unpriced) if r.calls else "",
            "cost": _cost(r),
            "models": ", ".join(r.models),
            "level": r.level,
        }
        for r in rows
    ]
    depth = max((r.level for r in rows), default=-1) + 1
    levels = [[s for s, r in zip(steps, rows, strict=True) if r.level == d] for d in range(depth)]
    run_id = str(cost.get("run_id", run_dir.name))
    simulated = bool(cost.get("simulated"))
    return render_page(
        "plan.html",
        title=f"ponder plan {run_id}" + (" (simulated)" if simulated else ""),
        heading=f"Plan run {run_id}",
        facts=facts,
        fact_ids={"status": "status", "usd": "usd", "calls": "calls"},
        simulated=simulated,
        args=_args(run_dir, events),
        steps=steps,
        levels=levels,
        waits=plan_waits(events),
        outputs=_outputs(run_dir, rows),
        preview_chars=OUTPUT_PREVIEW_CHARS,
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
