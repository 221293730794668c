"""Who survives a generation: elites, mutation parents and the discarded.

```
ranked  = population sorted by rank
elites  = ranked[:ceil(n/4)]
discard = ranked[n - floor(n/4):]
parents = [c for c in ranked if c not in discard][: n - len(elites)]
```
Elites are copied unchanged *and* mutated (they are also the first parents). A candidate that is
neither elite nor parent is discarded: ``bottom_quartile`` when in ``discard``, otherwise
``rounding_trim`` (the survivor squeezed out when ceil(n/4) > floor(n/4)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["DiscardReason", "Discarded", "Selection", "select"]

DiscardReason = Literal["bottom_quartile", "rounding_trim"]


@dataclass(frozen=True, slots=True)
class Discarded:
    candidate_id: str
    reason: DiscardReason


@dataclass(frozen=True, slots=True)
class Selection:
    elites: list[str]
    parents: list[str]
    discarded: list[Discarded]


def select(ranked: Sequence[str]) -> Selection:
    """Split candidate ids, best first, into elites, parents (best first) and the discarded."""
    if len(set(ranked)) != len(ranked):
        raise ValueError("ranked candidate ids must be unique")
    n = len(ranked)
    elites = list(ranked[: -(-n // 4)])
    bottom = set(ranked[n - n // 4 :])
    parents = [c for c in ranked if c not in bottom][: n - len(elites)]
    kept = set(elites) | set(parents)
    discarded = [
        Discarded(c, "bottom_quartile" if c in bottom else "rounding_trim")
        for c in ranked
        if c not in kept
    ]
    return Selection(elites=elites, parents=parents, discarded=discarded)
