"""Several judge calls on one scheduled pair, combined into the one comparison the fit reads.

Pure (no Temporal import), so workflow code and the tests use the same rules:

- ``judge_orders: both``: a judge sees the pair A/B and B/A. The two verdicts naming the same
  candidate are a win for it; anything else (each prefers whichever it saw first, or one says
  tie) is a tie. An order-sensitive judge thus cancels itself instead of deciding the pair.
- ``judges: [a, b, c]``: every judge of the panel judges the pair (in both orders when asked); a
  candidate that more than half of the panel names wins, else the pair is a tie.
- Orders are spread over the panel deterministically: with one order each, judge ``j`` of
  pair ``i`` sees the scheduled presentation first when ``j + i`` is even and the swapped one
  when it is odd. An even panel is balanced on every pair; an odd one has one judge more on
  one side, and that side alternates from pair to pair, so over the pairs the panel's verdicts
  carry no order effect in expectation, however its judges' biases are listed. (Runs started
  before this rule used ``j`` alone, which left an odd panel's extra judge on the scheduled
  side of every pair: the panel then favoured whichever candidate was shown first.)

Call slot ``s`` of pair ``i`` is call index ``i * slots + s``, so every call has its own key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from workflows.model_types import Usage
from workflows.tournament.critique import swap_letters
from workflows.tournament.judge_parse import JudgeVerdict, Winner
from workflows.tournament.schedule import ScheduledPair
from workflows.tournament.types import JudgeOrders

__all__ = [
    "JudgeOrders",
    "JudgedCall",
    "Slot",
    "SlotResult",
    "call_slots",
    "combine",
    "majority",
    "merged_critiques",
    "vote",
    "winner_id",
]


@dataclass(frozen=True, slots=True)
class Slot:
    """One judge call of a pair: which judge, and the order it is shown the two candidates."""

    judge: str
    presented_a: str
    presented_b: str


@dataclass(frozen=True)
class SlotResult:
    """What one slot's call returned (after its invalid-output retries)."""

    slot: Slot
    verdict: JudgeVerdict
    model: str
    provider: str
    attempts: int
    usage: Usage
    raw_outputs: list[str] = field(default_factory=list)


class JudgedCall(Protocol):
    """What this module reads of one judge call's verdict."""

    @property
    def judge(self) -> str: ...
    @property
    def presented_a(self) -> str: ...
    @property
    def presented_b(self) -> str: ...
    @property
    def winner(self) -> str: ...


def call_slots(
    pair: ScheduledPair, judges: Sequence[str], orders: JudgeOrders, index: int = 0
) -> list[Slot]:
    """The calls that judge ``pair`` (the ``index``-th of its phase): per judge its first
    order, then (both) the other one."""
    shown = (pair.presented_a, pair.presented_b)
    swapped = (pair.presented_b, pair.presented_a)
    # With both orders every judge sees both: only one order is worth alternating.
    shift = index if orders == "one" else 0
    slots: list[Slot] = []
    for j, judge in enumerate(judges):
        first, second = (shown, swapped) if (j + shift) % 2 == 0 else (swapped, shown)
        slots.append(Slot(judge, *first))
        if orders == "both":
            slots.append(Slot(judge, *second))
    return slots


def winner_id(call: JudgedCall) -> str | None:
    """The candidate a verdict names, or None for a tie."""
    if call.winner == "tie":
        return None
    return call.presented_a if call.winner == "A" else call.presented_b


def vote(calls: Sequence[JudgedCall]) -> str | None:
    """One judge's vote from its calls on a pair: the candidate all of them name, else a tie."""
    named = {winner_id(c) for c in calls}
    return named.pop() if len(named) == 1 else None


def majority(votes: Sequence[str | None]) -> str | None:
    """The candidate more than half of ``votes`` name, else None (a tie)."""
    counts = Counter(v for v in votes if v is not None)
    for candidate, count in counts.most_common(1):
        if 2 * count > len(votes):
            return candidate
    return None


def combine(pair: ScheduledPair, calls: Sequence[JudgedCall]) -> Winner:
    """The pair's verdict in its presented orientation: each judge votes, the majority decides."""
    judges = list(dict.fromkeys(c.judge for c in calls))
    votes = [vote([c for c in calls if c.judge == judge]) for judge in judges]
    chosen = majority(votes)
    if chosen is None:
        return "tie"
    return "A" if chosen == pair.presented_a else "B"


def merged_critiques(
    pair: ScheduledPair, calls: Sequence[JudgedCall], critiques: Sequence[tuple[str, str]]
) -> tuple[str, str]:
    """Each candidate's critiques from every call, as seen in ``pair``'s presented order.

    ``critiques[i]`` is call ``i``'s ``(feedback_a, feedback_b)``; a call shown B/A has its
    sides and its "Solution A/B" letters swapped, so the mutator reads one consistent text.
    """
    sides: tuple[list[str], list[str]] = ([], [])
    for call, (feedback_a, feedback_b) in zip(calls, critiques, strict=True):
        if call.presented_a != pair.presented_a:
            feedback_a, feedback_b = swap_letters(feedback_b), swap_letters(feedback_a)
        for side, text in zip(sides, (feedback_a, feedback_b), strict=True):
            if text.strip() and text.strip() not in side:
                side.append(text.strip())
    return "\n\n".join(sides[0]), "\n\n".join(sides[1])
