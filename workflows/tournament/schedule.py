"""Pair schedules: k-regular (judging phases) and all-pairs with balanced presentation.

A ``ScheduledPair`` keeps the scheduled pair and the order the judge sees it in; the presentation
order is randomised per pair to control the judge's position bias.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from workflows import phases
from workflows.tournament.profiles import RankBlock
from workflows.tournament.rng import phase_rng

__all__ = [
    "FINAL_JUDGING_PHASE",
    "ScheduledPair",
    "all_pairs_schedule",
    "check_regular",
    "final_schedule",
    "k_regular_pairs",
    "k_regular_schedule",
]

FINAL_JUDGING_PHASE = phases.FINAL_JUDGING


@dataclass(frozen=True, slots=True)
class ScheduledPair:
    """One judge call: the scheduled pair and the order it is presented in."""

    scheduled_a: str
    scheduled_b: str
    presented_a: str
    presented_b: str

    @property
    def swapped(self) -> bool:
        return self.presented_a != self.scheduled_a


def _check_ids(ids: Sequence[str]) -> None:
    duplicates = sorted(i for i, c in Counter(ids).items() if c > 1)
    if duplicates:
        raise ValueError(f"candidate ids must be unique: {', '.join(duplicates)} repeat")


def k_regular_pairs(ids: Sequence[str], k: int, rng: random.Random) -> list[tuple[str, str]]:
    """A shuffled list of unordered pairs in which every id appears exactly ``k`` times.

    Callers validate ``k`` first (``Profile.check`` / ``RankBlock.calls``); a bad ``k`` here is a
    programming error and raises ``ValueError``.
    """
    n = len(ids)
    _check_ids(ids)
    if not 1 <= k < n or (n * k) % 2:
        raise ValueError(f"no {k}-regular schedule over {n} candidates: need 1 <= k < n, n*k even")
    order = list(ids)
    rng.shuffle(order)
    pairs: list[tuple[str, str]] = []
    for offset in range(1, k // 2 + 1):
        pairs.extend((order[i], order[(i + offset) % n]) for i in range(n))
    if k % 2:
        # n is even here (n*k even with k odd): match each id with the one opposite it.
        pairs.extend((order[i], order[i + n // 2]) for i in range(n // 2))
    check_regular(pairs, ids, k)
    rng.shuffle(pairs)
    return pairs


def check_regular(pairs: Sequence[tuple[str, str]], ids: Sequence[str], k: int) -> None:
    """Raise ``ValueError`` unless ``pairs`` has no self pair, no repeat and every degree ``k``."""
    known = set(ids)
    seen: set[frozenset[str]] = set()
    degree: Counter[str] = Counter()
    for a, b in pairs:
        if a == b:
            raise ValueError(f"self pair {a!r} in schedule")
        if a not in known or b not in known:
            raise ValueError(f"pair ({a!r}, {b!r}) names an unknown candidate")
        key = frozenset((a, b))
        if key in seen:
            raise ValueError(f"duplicate pair ({a!r}, {b!r}) in schedule")
        seen.add(key)
        degree[a] += 1
        degree[b] += 1
    wrong = sorted(i for i in ids if degree[i] != k)
    if wrong:
        raise ValueError(f"degree of {wrong[0]!r} is {degree[wrong[0]]}, not {k}")


def k_regular_schedule(ids: Sequence[str], k: int, rng: random.Random) -> list[ScheduledPair]:
    """``k_regular_pairs`` plus one presentation coin per pair, in schedule order."""
    schedule = []
    for a, b in k_regular_pairs(ids, k, rng):
        swap = rng.random() < 0.5
        schedule.append(ScheduledPair(a, b, b if swap else a, a if swap else b))
    return schedule


def all_pairs_schedule(ids: Sequence[str], rng: random.Random) -> list[ScheduledPair]:
    """Every unordered pair once; each id is presented as A in floor or ceil of (n-1)/2 calls.

    Orient pair (i, i+d) on a shuffled circle as A=i for d < n/2: every id leads (n-1)//2 of those.
    For even n the n/2 antipodal pairs add one more A to exactly one side each.
    """
    n = len(ids)
    _check_ids(ids)
    order = list(ids)
    rng.shuffle(order)
    pairs: list[ScheduledPair] = []
    for d in range(1, (n - 1) // 2 + 1):
        for i in range(n):
            a, b = order[i], order[(i + d) % n]
            pairs.append(ScheduledPair(a, b, a, b))
    if n % 2 == 0:
        for i in range(n // 2):
            a, b = order[i], order[i + n // 2]
            pairs.append(ScheduledPair(a, b, a, b))
    rng.shuffle(pairs)
    return pairs


def final_schedule(
    ids: Sequence[str], *, m: int, seed: int | str, rank: RankBlock | None = None
) -> list[ScheduledPair]:
    """The final ranking: ``m``-regular, or the rank block (whose ``seed`` replaces the run's).

    Refuses a rank block that cannot run (``rank.*`` codes) before drawing anything.
    """
    if rank is None:
        return k_regular_schedule(ids, m, phase_rng(seed, FINAL_JUDGING_PHASE))
    rank = rank.resolved(len(ids))  # auto: all pairs while they fit the cap, else k-regular
    rank.calls(len(ids))
    rng = phase_rng(rank.seed if rank.seed is not None else seed, FINAL_JUDGING_PHASE)
    if rank.mode == "all-pairs":
        return all_pairs_schedule(ids, rng)
    assert rank.k is not None  # rank.calls() refused a k-regular block without k
    return k_regular_schedule(ids, rank.k, rng)
