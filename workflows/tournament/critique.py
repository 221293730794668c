"""Turn the judges' critiques of one candidate into the feedback its mutator reads.

From every comparison the candidate took part in, its own side's critique goes to the ``won``,
``tied`` or ``lost`` bucket; "Solution A" / "Candidate A" (the noun in any case: "solution A",
"SOLUTION A") of its own letter become "your solution" and the other letter "the other
solution", so the mutator is not confused by presentation letters that changed from call to
call. The letter itself must be upper-case: "solution a" is ordinary English.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

__all__ = [
    "DEFAULT_CRITIQUE_CHARS",
    "FALLBACK_CRITIQUE",
    "MIN_CRITIQUE_CHARS",
    "TRUNCATION_MARK",
    "JudgedComparison",
    "aggregate_critique",
    "aggregate_critiques",
    "swap_letters",
]

DEFAULT_CRITIQUE_CHARS = 16_000
MIN_CRITIQUE_CHARS = 256
TRUNCATION_MARK = "\n\n[Critique truncated.]"
FALLBACK_CRITIQUE = (
    "No specific critique was produced. Improve correctness, completeness, and clarity."
)
_SECTIONS = ("won", "tied", "lost")
# "Solution A", "candidate B", "SOLUTION A's"; not "Solutions A", "a B-tree" or "solution a".
_LETTER = re.compile(r"\b(?i:solution|candidate)\s+([AB])(?!\w|-\w)")


class JudgedComparison(Protocol):
    """The fields of a comparison row this module reads."""

    @property
    def presented_a(self) -> str: ...
    @property
    def presented_b(self) -> str: ...
    @property
    def winner(self) -> str: ...
    @property
    def critique_a(self) -> str: ...
    @property
    def critique_b(self) -> str: ...


def _rewrite(text: str, own_letter: str) -> str:
    def name(match: re.Match[str]) -> str:
        return "your solution" if match[1] == own_letter else "the other solution"

    # One pass with a callback, so a replacement is never rewritten again.
    return _LETTER.sub(name, text)


def swap_letters(text: str) -> str:
    """ "Solution A" <-> "Solution B" (same rule as above): a critique written with the pair shown
    B/A, read in the A/B order (``judge_orders: both``)."""

    def other(match: re.Match[str]) -> str:
        letter = "B" if match[1] == "A" else "A"
        return match[0][: match.start(1) - match.start(0)] + letter

    return _LETTER.sub(other, text)


def aggregate_critique(
    candidate_id: str,
    comparisons: Iterable[JudgedComparison],
    *,
    critique_chars: int = DEFAULT_CRITIQUE_CHARS,
) -> str:
    """The numbered won / tied / lost feedback for one candidate, capped at ``critique_chars``."""
    if critique_chars < MIN_CRITIQUE_CHARS:
        raise ValueError(
            f"critique_chars must be >= {MIN_CRITIQUE_CHARS} (got {critique_chars}): "
            "raise it or leave the default 16000"
        )
    buckets: dict[str, list[str]] = {section: [] for section in _SECTIONS}
    for c in comparisons:
        if candidate_id == c.presented_a:
            letter, critique = "A", c.critique_a
        elif candidate_id == c.presented_b:
            letter, critique = "B", c.critique_b
        else:
            continue
        section = "tied" if c.winner == "tie" else "won" if c.winner == letter else "lost"
        buckets[section].append(_rewrite(critique or "", letter).strip())
    seen: set[str] = set()
    blocks: list[str] = []
    for section in _SECTIONS:
        items = []
        for item in buckets[section]:
            if item and item not in seen:  # the first copy wins
                seen.add(item)
                items.append(item)
        if items:
            numbered = "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))
            blocks.append(f"Feedback from comparisons this solution {section}:\n{numbered}")
    text = "\n\n".join(blocks) or FALLBACK_CRITIQUE
    if len(text) > critique_chars:
        text = text[: critique_chars - len(TRUNCATION_MARK)].rstrip() + TRUNCATION_MARK
    return text


def aggregate_critiques(
    candidate_ids: Sequence[str],
    comparisons: Sequence[JudgedComparison],
    *,
    critique_chars: int = DEFAULT_CRITIQUE_CHARS,
) -> dict[str, str]:
    """``aggregate_critique`` for each id, in one call."""
    return {
        cid: aggregate_critique(cid, comparisons, critique_chars=critique_chars)
        for cid in candidate_ids
    }
