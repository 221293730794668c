"""The pure scorers: exact match, numeric with tolerance, regex. Each returns a score in [0, 1].

Pure (``re`` for the fixed number pattern; a scorer's own pattern runs on RE2 through
``workflows/patterns.py``, never on ``re``). The command, judge and sim-truth scorers need the
worker (a subprocess, a model call, the sim provider's trailer) and live in
``activities/campaign/scoring.py``.
"""

from __future__ import annotations

import re

from workflows.campaign.document import ExactScorer, NumericScorer, RegexScorer
from workflows.patterns import search

__all__ = ["last_number", "normalize", "score_exact", "score_numeric", "score_regex"]

_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def normalize(text: str) -> str:
    """Trimmed, case-folded, whitespace collapsed: "  The  Answer\n" == "the answer"."""
    return " ".join(text.split()).casefold()


def last_number(text: str) -> float | None:
    """The last number written in ``text`` (thousands commas allowed), or None."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


def score_exact(scorer: ExactScorer, answer: str) -> float:
    if scorer.normalize:
        return float(normalize(answer) == normalize(scorer.expected))
    return float(answer == scorer.expected)


def score_numeric(scorer: NumericScorer, answer: str) -> float:
    """1.0 when the answer's last number is within the tolerance of ``expected``."""
    value = last_number(answer)
    if value is None:
        return 0.0
    tolerance = scorer.tolerance * abs(scorer.expected) if scorer.relative else scorer.tolerance
    return float(abs(value - scorer.expected) <= tolerance)


def score_regex(scorer: RegexScorer, answer: str) -> float:
    return float(search(scorer.pattern, answer))
