"""The numbers of one ``ponder top`` frame, from the rows its command reads.

Pure: no Temporal, no HTTP, no files. The command (``client.top_cli``) reads the server's
visibility list, the run store, the worker's Prometheus text and the task queue's stats; this
module turns them into the frame, so every figure can be checked against a hand count.

Calls and spend per provider come from ponder's own counters (``ponder_model_calls``,
``ponder_model_spend_micro_usd``) scraped from a worker's ``--metrics-bind`` endpoint: they are
the only record with both a provider and a price per call. A rate needs two scrapes, so the
frame keeps the scrapes of the last minute and compares the newest with the oldest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = [
    "CALLS",
    "SPEND_MICRO_USD",
    "WINDOW_S",
    "Frame",
    "Pause",
    "ProviderRate",
    "Scrape",
    "oldest_pause",
    "open_waits",
    "provider_rates",
    "provider_totals",
    "queue_literal",
    "runs_by_state",
]

CALLS = "ponder_model_calls"
SPEND_MICRO_USD = "ponder_model_spend_micro_usd"
WINDOW_S = 60.0
"""Rates are over the last minute (or what the view has seen of it)."""

# What a visibility query cannot match, however it is quoted: the query language reads
# backslash escapes, but a SQL-backed server (the dev server's SQLite among them) writes the
# decoded value back into its own SQL with MySQL's escapes, so a double quote, a backslash or a
# control character such as a tab never compares equal (all control characters are refused,
# not only those), and a quote at either end is lost.
_UNMATCHABLE = re.compile(r'["\\\x00-\x1f]')


def queue_literal(name: str) -> str | None:
    """``name`` as a visibility-query string literal, or None when no literal can match it."""
    if not name or _UNMATCHABLE.search(name) or name.startswith("'") or name.endswith("'"):
        return None
    return "'" + name.replace("'", "''") + "'"


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Scrape:
    """One reading of the counters: when (seconds, any clock), and per provider the calls and
    micro-USD counted so far."""

    at: float
    totals: Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class ProviderRate:
    provider: str
    calls_per_s: float
    usd_per_min: float


@dataclass(frozen=True)
class Pause:
    """A plan step waiting for a person: a gate or a pause, open since ``since``."""

    run_id: str
    step: str
    waiting_for: str
    since: str
    waited_s: float


@dataclass
class Frame:
    runs: dict[str, dict[str, int]] = field(default_factory=dict)
    """state -> kind -> runs."""
    providers: list[ProviderRate] | None = None
    """None: no metrics endpoint was given (calls and spend are not measured)."""
    window_s: float = 0.0
    """The seconds the rates are over (0: one scrape so far, no rate yet)."""
    oldest_pause: Pause | None = None
    backlog: dict[str, int] = field(default_factory=dict)
    """task queue type (workflow, activity) -> approximate backlog."""
    task_queue: str = ""


def runs_by_state(rows: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """(kind, state) rows counted as state -> kind -> runs, both sorted by name."""
    counts: dict[str, dict[str, int]] = {}
    for kind, state in rows:
        by_kind = counts.setdefault(state, {})
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return {state: dict(sorted(counts[state].items())) for state in sorted(counts)}


def provider_totals(text: str) -> dict[str, tuple[float, float]]:
    """Per provider, the calls and micro-USD a Prometheus text exposition counts so far (every
    model and outcome summed). Lines it cannot read are skipped: this is a view, not a check."""
    totals: dict[str, tuple[float, float]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.groups()
        if name not in (CALLS, SPEND_MICRO_USD):
            continue
        provider = dict(_LABEL.findall(labels or "")).get("provider")
        try:
            number = float(value)
        except ValueError:
            continue
        if provider is None or number != number:  # NaN
            continue
        calls, spend = totals.get(provider, (0.0, 0.0))
        if name == CALLS:
            calls += number
        else:
            spend += number
        totals[provider] = (calls, spend)
    return totals


def _increase(old: float, new: float) -> float:
    """A counter's increase; one that went down was reset (a worker restarted) and counts from
    zero, as Prometheus's ``increase`` does."""
    return new - old if new >= old else new


def provider_rates(
    scrapes: Sequence[Scrape], *, window_s: float = WINDOW_S
) -> tuple[list[ProviderRate], float]:
    """Calls per second and USD per minute per provider between the newest scrape and the
    oldest one at most ``window_s`` before it, and the seconds between them (0 with fewer
    than two scrapes: every rate is then 0)."""
    if not scrapes:
        return [], 0.0
    newest = scrapes[-1]
    oldest = next(s for s in scrapes if newest.at - s.at <= window_s)
    elapsed = newest.at - oldest.at
    rates = []
    for provider in sorted(newest.totals):
        calls, spend = newest.totals[provider]
        before_calls, before_spend = oldest.totals.get(provider, (0.0, 0.0))
        if elapsed <= 0:
            rates.append(ProviderRate(provider, 0.0, 0.0))
            continue
        rates.append(
            ProviderRate(
                provider,
                calls_per_s=_increase(before_calls, calls) / elapsed,
                usd_per_min=_increase(before_spend, spend) / 1_000_000 * 60 / elapsed,
            )
        )
    return rates, max(elapsed, 0.0)


def open_waits(run_id: str, events: Iterable[Mapping[str, object]], now: datetime) -> list[Pause]:
    """The gates and pauses a plan run's trace opened and has not closed, oldest first.

    ``gate.opened`` closes with ``gate.decided``, ``paused`` with ``resumed``, per step; a
    ``run.closed`` closes them all."""
    waiting: dict[str, tuple[str, str]] = {}
    for event in events:
        kind = event.get("type")
        data = event.get("data")
        if kind == "run.closed":
            waiting.clear()
            continue
        if not isinstance(data, Mapping) or not isinstance(step := data.get("step"), str):
            continue
        ts = str(event.get("ts", ""))
        if kind == "gate.opened":
            waiting[step] = ("gate", ts)
        elif kind == "paused":
            waiting[step] = (str(data.get("state") or "pause"), ts)
        elif kind in ("gate.decided", "resumed"):
            waiting.pop(step, None)
    pauses = []
    for step, (what, ts) in waiting.items():
        try:
            since = datetime.fromisoformat(ts)
        except ValueError:
            continue
        if since.tzinfo is None and now.tzinfo is not None:
            since = since.replace(tzinfo=now.tzinfo)
        pauses.append(Pause(run_id, step, what, ts, max(0.0, (now - since).total_seconds())))
    return sorted(pauses, key=lambda p: -p.waited_s)


def oldest_pause(pauses: Iterable[Pause]) -> Pause | None:
    return max(pauses, key=lambda p: p.waited_s, default=None)
