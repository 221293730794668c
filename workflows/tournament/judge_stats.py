"""How far to trust the judge: position bias, order flips and panel agreement, per run.

Pure (no Temporal import); the artifact writer calls it on the run's comparisons for
``summary.json``'s ``judge`` object. Every rate comes with a 95% Wilson score interval, the one
``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` gives (tests/tournament/
test_judge_trust.py checks them equal). It is computed here in closed form with the standard
library's normal quantile: importing ``scipy.stats`` cost every process that ran a tournament
about a second of CPU (on a cold worker, during the first artifact write) for this one formula.

- ``first_position_win_rate``: of the decisive verdicts (ties left out), the share won by the
  candidate shown first. Presentation order is a fair coin per pair (or balanced: all pairs, both
  orders), so an unbiased judge is at 0.5 whatever the qualities; a judge that picks the first
  shown with probability P regardless is at ``0.5 + P/2``, hence ``position_bias = 2*rate - 1``
  (its interval likewise). ``significant``: the interval leaves out 0.5.
- ``flip_rate`` (both orders only): of the pairs one judge saw both ways, the share whose two
  verdicts do not name the same outcome (a win for each side, or a win and a tie).
- ``ties`` counts judge calls that said tie; ``tied_pairs`` counts pairs whose combined verdict
  is a tie (with both orders or a panel, a pair whose calls disagree is one, though no call
  said tie).
- ``panel.first_position_win_rate`` (a panel): the same rate for the panel's combined verdicts,
  in each pair's scheduled presentation: with the presentation balanced over the panel and
  across pairs (``verdicts``), it sits at 0.5 whatever the judges' own biases.
- ``longer_win_rate`` (where candidates' lengths are known; per judge too): of the decisive
  verdicts between candidates of different lengths, the share the longer one won, with
  ``significant`` when its interval leaves out 0.5. Length and quality may go together, so read
  it as a flag to look at.
- ``by_judge`` (a panel): each judge's rates, and its ``agreement_with_majority``: the share of
  pairs where its vote (its orders combined) is the panel's verdict.
- ``own_family_win_rate`` (per judge, where candidates' families are known): of its decisive
  verdicts on pairs with exactly one candidate of its own family, the share that candidate won.
  Quality is not held fixed here: read it against the other judges' rate on the same pairs.
  ``significant``: its interval leaves out 0.5.
- ``confidence_vs_correctness`` (where true qualities are known: the sim): of the decisive
  verdicts that carry a confidence, the share that named the better candidate, the mean
  confidence of the right and of the wrong ones, and their concordance (the chance a right
  verdict was the surer of a right-wrong pair): whether weighing verdicts by confidence
  (``weight_by_confidence``) can help.

Each verdict is one judge call: a ``comparisons.jsonl`` row without ``verdicts`` is one, a row
with them contributes each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import sqrt
from statistics import NormalDist
from typing import Any, Protocol

from workflows.families import model_family
from workflows.tournament.verdicts import JudgedCall, majority, vote, winner_id

__all__ = ["LEVEL", "Rate", "confidence_vs_correctness", "judge_summary", "rate"]

LEVEL = 0.95
_Z = NormalDist().inv_cdf(0.5 + 0.5 * LEVEL)


@dataclass(frozen=True)
class Rate:
    """``count`` of ``total`` with its Wilson interval; an empty total has no rate."""

    count: int
    total: int
    rate: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "total": self.total,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
            "level": LEVEL,
        }


def rate(count: int, total: int) -> Rate:
    """``count`` of ``total``, with the Wilson score interval at ``LEVEL`` (Newcombe 1998, without
    continuity correction: scipy's formula and its ends at 0 and ``total``)."""
    if total == 0:
        return Rate(0, 0, None, None, None)
    p = count / total
    denominator = 2 * (total + _Z**2)
    center = (2 * total * p + _Z**2) / denominator
    delta = _Z / denominator * sqrt(4 * total * p * (1 - p) + _Z**2)
    low = 0.0 if count == 0 else center - delta
    high = 1.0 if count == total else center + delta
    return Rate(count, total, p, low, high)


class _Row(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def presented_a(self) -> str: ...
    @property
    def presented_b(self) -> str: ...
    @property
    def winner(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def verdicts(self) -> Sequence[JudgedCall] | None: ...


@dataclass(frozen=True)
class _Call:
    judge: str
    presented_a: str
    presented_b: str
    winner: str


def _calls(row: _Row) -> list[JudgedCall]:
    if row.verdicts:
        return list(row.verdicts)
    return [_Call(row.model, row.presented_a, row.presented_b, row.winner)]


def _position(calls: Iterable[JudgedCall]) -> dict[str, Any]:
    decisive = [c for c in calls if c.winner != "tie"]
    first = rate(sum(c.winner == "A" for c in decisive), len(decisive))
    out: dict[str, Any] = {"first_position_win_rate": first.as_dict()}
    if first.rate is not None and first.low is not None and first.high is not None:
        out["position_bias"] = {
            "estimate": 2 * first.rate - 1,
            "low": 2 * first.low - 1,
            "high": 2 * first.high - 1,
            "significant": not first.low <= 0.5 <= first.high,
        }
    return out


def _flagged(measured: Rate) -> dict[str, Any]:
    """The rate with ``significant``: its interval leaves out 0.5."""
    significant = (
        measured.low is not None
        and measured.high is not None
        and not measured.low <= 0.5 <= measured.high
    )
    return measured.as_dict() | {"significant": significant}


def _flips(rows: Sequence[Sequence[JudgedCall]]) -> Rate:
    """Pairs a judge saw in both orders whose verdicts name different outcomes."""
    flips = total = 0
    for calls in rows:
        by_judge: dict[str, list[JudgedCall]] = defaultdict(list)
        for c in calls:
            by_judge[c.judge].append(c)
        for mine in by_judge.values():
            if len({c.presented_a for c in mine}) < 2:
                continue  # seen in one order only
            total += 1
            flips += len({winner_id(c) for c in mine}) > 1
    return rate(flips, total)


def _own_family(calls: Iterable[JudgedCall], family: str, families: Mapping[str, str]) -> Rate:
    own = total = 0
    for c in calls:
        mine = [cid for cid in (c.presented_a, c.presented_b) if families.get(cid) == family]
        if c.winner == "tie" or len(mine) != 1:
            continue
        total += 1
        own += winner_id(c) == mine[0]
    return rate(own, total)


def _longer(calls: Iterable[JudgedCall], lengths: Mapping[str, int]) -> Rate:
    """Decisive verdicts between candidates of different lengths won by the longer one."""
    longer = total = 0
    for c in calls:
        a, b = lengths.get(c.presented_a), lengths.get(c.presented_b)
        if c.winner == "tie" or a is None or b is None or a == b:
            continue
        total += 1
        longer += winner_id(c) == (c.presented_a if a > b else c.presented_b)
    return rate(longer, total)


def judge_summary(
    rows: Sequence[_Row],
    *,
    both_orders: bool,
    panel: Sequence[str],
    families: Mapping[str, str] | None = None,
    lengths: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``summary.json``'s ``judge`` object for the run's comparison rows (every phase);
    ``families``: candidate id -> its model's family, where known; ``lengths``: candidate id
    -> its text's length in characters."""
    per_row = [_calls(r) for r in rows]
    every = [c for calls in per_row for c in calls]
    summary: dict[str, Any] = {
        "verdicts": len(every),
        "pairs": len(rows),
        "ties": sum(c.winner == "tie" for c in every),
        "tied_pairs": sum(r.winner == "tie" for r in rows),
        "orders": "both" if both_orders else "one",
        "judges": list(panel),
    }
    summary |= _position(every)
    if lengths:
        summary["longer_win_rate"] = _flagged(_longer(every, lengths))
    if both_orders:
        summary["flip_rate"] = _flips(per_row).as_dict()
    if families and len(set(families.values())) > 1:
        summary["own_family_win_rate"] = {
            judge: _flagged(
                _own_family(
                    (c for c in every if c.judge == judge or len(panel) == 1),
                    model_family(judge),
                    families,
                )
            )
            for judge in panel
        }
    if len(panel) > 1:
        summary["panel"] = _position(
            _Call("panel", r.presented_a, r.presented_b, r.winner) for r in rows
        )
        by_judge: dict[str, Any] = {}
        for judge in panel:
            mine_rows = [[c for c in calls if c.judge == judge] for calls in per_row]
            entry = _position(c for calls in mine_rows for c in calls)
            if lengths:
                entry["longer_win_rate"] = _flagged(
                    _longer((c for calls in mine_rows for c in calls), lengths)
                )
            if both_orders:
                entry["flip_rate"] = _flips(mine_rows).as_dict()
            agreed = total = 0
            for calls, mine in zip(per_row, mine_rows, strict=True):
                if not mine:
                    continue
                judges = list(dict.fromkeys(c.judge for c in calls))
                verdict = majority([vote([c for c in calls if c.judge == j]) for j in judges])
                total += 1
                agreed += vote(mine) == verdict
            entry["agreement_with_majority"] = rate(agreed, total).as_dict()
            by_judge[judge] = entry
        summary["by_judge"] = by_judge
    return summary


def confidence_vs_correctness(
    rows: Sequence[_Row], quality: Mapping[str, float]
) -> dict[str, Any] | None:
    """Where candidates' true qualities are known (the sim): whether the judge's confidence
    tells its right verdicts from its wrong ones. Of the decisive verdicts that carry a
    confidence, between candidates of different quality: how many named the better one, the
    mean confidence of those and of the rest, and ``concordance``, the chance that a random
    right verdict was given more confidence than a random wrong one (ties count half; 0.5:
    confidence says nothing, 1: it always ranks the right ones higher). None: no such verdict."""
    right: list[float] = []
    wrong: list[float] = []
    for row in rows:
        calls: Sequence[Any] = row.verdicts or [row]
        for call in calls:
            confidence = getattr(call, "confidence", None)
            a, b = call.presented_a, call.presented_b
            if confidence is None or call.winner == "tie" or a not in quality or b not in quality:
                continue
            if quality[a] == quality[b]:
                continue
            better = "A" if quality[a] > quality[b] else "B"
            (right if call.winner == better else wrong).append(float(confidence))
    if not right and not wrong:
        return None
    return {
        "verdicts": len(right) + len(wrong),
        "correct": rate(len(right), len(right) + len(wrong)).as_dict(),
        "mean_confidence_correct": sum(right) / len(right) if right else None,
        "mean_confidence_incorrect": sum(wrong) / len(wrong) if wrong else None,
        "concordance": _concordance(right, wrong),
    }


def _concordance(high: Sequence[float], low: Sequence[float]) -> float | None:
    """P(an entry of ``high`` > one of ``low``) + half P(equal): the Mann-Whitney U over the
    pairs, by one sort (no pair loop)."""
    if not high or not low:
        return None
    merged = sorted([(v, 1) for v in high] + [(v, 0) for v in low])
    u = 0.0
    below = 0  # entries of low strictly below the current value
    i = 0
    while i < len(merged):
        j = i
        while j < len(merged) and merged[j][0] == merged[i][0]:
            j += 1
        group_high = sum(flag for _, flag in merged[i:j])
        group_low = (j - i) - group_high
        u += group_high * (below + 0.5 * group_low)
        below += group_low
        i = j
    return u / (len(high) * len(low))
