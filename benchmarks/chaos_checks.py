"""The chaos run's checks, over what a run leaves: run files, the provider's exchanges, the
kills and restarts. Pure functions of their arguments (and files), so each is tested directly
(``tests/test_chaos.py``); ``benchmarks.chaos`` drives the run and prints what they find.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.chaos_provider import Exchange
from workflows.budget import BudgetLimits
from workflows.tournament.types import Concurrency

__all__ = [
    "ANSWER_GRACE_S",
    "PAUSED",
    "Disruption",
    "Run",
    "answered_twice",
    "check_files",
    "excused",
    "lagging",
    "overspent",
    "read_jsonl",
    "recovery_times",
    "unrecorded",
]

PAUSED = {"awaiting_budget", "awaiting_gate", "awaiting_input", "awaiting_wall_clock"}
"""A run waiting for a person or for more budget: it ended its part, and that is not lost."""
ANSWER_GRACE_S = 5.0
"""A call answered this long before a kill may still be repeated: the worker may die before it
reports the answer to the server."""


@dataclass
class Run:
    kind: str
    id: str
    limits: BudgetLimits = field(default_factory=BudgetLimits)
    gate_approved: bool = False
    state: str = "running"
    """Last seen: running, completed, failed, ..., or a paused state."""
    why: str = ""
    """A failed run's failure."""
    landed: int | None = None
    """A paused tournament: the calls that have landed, by its own query."""


@dataclass
class Disruption:
    kind: str  # "worker" or "server"
    at: float
    until: float
    """The end of the window whose in-flight calls may be repeated (the kill, or the server's
    return plus ``ANSWER_GRACE_S``)."""
    ports: set[int] = field(default_factory=set)
    """A killed worker's connections to the provider at the kill."""
    back_s: float | None = None
    """The server: how long until it answered again."""


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The rows of ``path`` and how many of its lines did not parse (a torn write)."""
    rows, torn = [], 0
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            torn += 1
    return rows, torn


ROW_KEYS = {
    "usage.jsonl": "usage_id",
    "calls.jsonl": "invocation",
    "candidates.jsonl": "id",
    "events.jsonl": "seq",
    "records.jsonl": "run_id",
}


def check_files(runs_dir: Path) -> tuple[list[str], list[str], int]:
    """Torn files, repeated rows (``file: key``), and leftover temporary files."""
    torn, repeated, temporary = [], [], 0
    for path in sorted(runs_dir.rglob("*")):
        if not path.is_file():
            continue
        name = path.name
        if name.startswith(".") and name not in (".write-order",) and path.parent.name != ".claims":
            temporary += 1  # a write killed between its temporary file and the rename
            continue
        if name.endswith(".json") or name == ".write-order":
            try:
                json.loads(path.read_text())
            except ValueError:
                torn.append(str(path.relative_to(runs_dir)))
        elif name.endswith(".jsonl"):
            rows, bad = read_jsonl(path)
            if bad:
                torn.append(f"{path.relative_to(runs_dir)} ({bad} lines)")
            key = ROW_KEYS.get(name)
            if key:
                counts = Counter(str(row.get(key)) for row in rows)
                repeated += [
                    f"{path.relative_to(runs_dir)}: {k}" for k, n in counts.items() if n > 1
                ]
        elif path.parent.name == "artifacts" and path.stat().st_size == 0:
            torn.append(f"{path.relative_to(runs_dir)} (empty)")
    return torn, repeated, temporary


def overspent(runs_dir: Path, runs: list[Run]) -> list[str]:
    """Runs whose recorded spend passed one of their limits. ``max_calls`` is reserved before
    each call, so it holds exactly; a call's price is known only when it lands, so USD may pass
    ``max_usd`` by what the calls in flight cost (docs/tournaments.md): at most the in-flight
    window times the dearest call."""
    over = []
    window = max(Concurrency().generate, Concurrency().judge, Concurrency().mutate)
    for run in runs:
        run_dir = runs_dir / run.id
        limits = run.limits
        calls, usd, dearest = 0, 0.0, 0.0
        if (run_dir / "usage.jsonl").is_file():
            rows, _ = read_jsonl(run_dir / "usage.jsonl")
            prices = [float(r.get("usd") or 0) for r in rows]
            calls, usd, dearest = len(rows), sum(prices), max(prices, default=0.0)
        elif (run_dir / "cost.json").is_file():
            cost = json.loads((run_dir / "cost.json").read_text())
            calls, usd = int(cost.get("calls", 0)), float(cost.get("usd", 0))
        elif (run_dir / "campaign.json").is_file():
            calls = campaign_calls(run_dir)
        if limits.max_calls is not None and calls > limits.max_calls:
            over.append(f"{run.id}: {calls} calls, limit {limits.max_calls}")
        if limits.max_usd is not None and usd > limits.max_usd + window * dearest + 1e-9:
            over.append(f"{run.id}: ${usd:.4f}, limit ${limits.max_usd} (+{window} calls)")
    return over


def unrecorded(runs_dir: Path) -> list[str]:
    """Tournament runs (campaign cells included) whose ledger and record disagree: every call
    reserved (``spent.calls``) has its usage row or is still in flight, and an ended run has
    none in flight."""
    wrong = []
    for progress_file in sorted(runs_dir.glob("*/progress.json")):
        run_dir = progress_file.parent
        progress = json.loads(progress_file.read_text()).get("progress", {})
        if not (run_dir / "usage.jsonl").is_file() or "spent" not in progress:
            continue
        rows = len(read_jsonl(run_dir / "usage.jsonl")[0])
        reserved, in_flight = progress["spent"]["calls"], progress.get("in_flight", 0)
        ended = progress.get("status") in ("completed", "failed", "cancelled")
        if rows + in_flight != reserved or (ended and in_flight):
            wrong.append(f"{run_dir.name}: {reserved} calls, {rows} rows, {in_flight} in flight")
    return wrong


def lagging(runs_dir: Path, runs: list[Run]) -> dict[str, int]:
    """Paused tournaments whose files hold fewer usage rows than calls that have landed (by
    the run's own query): the rows a paused run has not written yet, by run."""
    lag = {}
    for run in runs:
        usage = runs_dir / run.id / "usage.jsonl"
        if run.landed is None or not usage.is_file():
            continue
        if missing := run.landed - len(read_jsonl(usage)[0]):
            lag[run.id] = missing
    return lag


def campaign_calls(run_dir: Path) -> int:
    rows, _ = (
        read_jsonl(run_dir / "records.jsonl") if (run_dir / "records.jsonl").is_file() else ([], 0)
    )
    return sum(int(r.get("calls", 0)) for r in rows)


def answered_twice(exchanges: list[Exchange]) -> dict[str, list[Exchange]]:
    by_call: dict[str, list[Exchange]] = {}
    for exchange in exchanges:
        if exchange.answered is not None:
            by_call.setdefault(exchange.call_id, []).append(exchange)
    return {call: answers for call, answers in by_call.items() if len(answers) > 1}


def excused(answers: list[Exchange], disruptions: list[Disruption]) -> bool:
    """Whether a call answered more than once was in flight at a kill or restart: every
    answer but the last went out no earlier than ``ANSWER_GRACE_S`` before one."""
    return all(
        any(
            first.arrived <= d.until and first.answered is not None
            and first.answered >= d.at - ANSWER_GRACE_S
            for d in disruptions
        )
        for first in answers[:-1]
    )  # fmt: skip


def recovery_times(exchanges: list[Exchange], disruptions: list[Disruption]) -> list[float]:
    """Per worker kill with calls in flight: seconds until each of them was answered again."""
    times = []
    for d in disruptions:
        if d.kind != "worker":
            continue
        cut = {
            e.call_id for e in exchanges
            if e.port in d.ports and e.arrived <= d.at and (e.answered is None or e.answered > d.at)
        }  # fmt: skip
        if not cut:
            continue
        again = [
            min((e.answered for e in exchanges if e.call_id == call and e.arrived > d.at
                 and e.answered is not None), default=None)
            for call in cut
        ]  # fmt: skip
        if all(a is not None for a in again):
            times.append(max(a for a in again if a is not None) - d.at)
    return times
