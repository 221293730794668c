"""Parse a judge's answer into a verdict, or say exactly why it cannot be parsed.

Tried in order: the trimmed text, the first fenced code block, the slice from the first ``{`` to
the last ``}``. The first of those that is a JSON object must validate as
``{feedback_a, feedback_b, winner: "A" | "B" | "tie", confidence?: [0, 1]}``
(``critique_for_A`` / ``critique_for_B`` are accepted for the feedback fields). Lenient only
where nothing is lost: ``winner`` ignores case and spaces ("a", " Tie "); a missing or null
feedback is empty (an empty critique is dropped later); other keys are ignored. Anything else is
a ``JudgeParseError``: the caller retries, and never invents a tie. An answer longer than
``MAX_JSON_CHARS`` (131,072 characters) is not searched at all (``too_long``): a verdict is a few
hundred characters, and workflow code must not parse megabytes per call.
Stdlib ``json`` only: workflow code imports this module.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from workflows.bounds import MAX_JSON_CHARS
from workflows.patterns import compile_pattern

__all__ = ["JudgeParseError", "JudgeVerdict", "Outcome", "Winner", "parse_judge_output"]

Winner = Literal["A", "B", "tie"]

# On RE2: on Python's re this scan is quadratic in a judge reply's length (an opening fence
# followed by 32,000 characters and no closing one took 7 s, in workflow code).
_FENCE = compile_pattern(r"(?s)```[^\n`]*\n?(.*?)```")
_WINNERS: dict[str, Winner] = {"a": "A", "b": "B", "tie": "tie"}


_Y: dict[str, float] = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass(frozen=True, slots=True)
class Outcome:
    """One judged comparison as the judge saw it: what the ranking maths consume."""

    presented_a: str
    presented_b: str
    winner: Winner

    @property
    def y(self) -> float:
        """1 when A won, 0 when B won, 0.5 for a tie."""
        return _Y[self.winner]


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    winner: Winner
    feedback_a: str
    feedback_b: str
    confidence: float | None = None


class JudgeParseError(ValueError):
    """The judge output is not a valid verdict; ``reason`` is a short stable tag."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _candidates(text: str) -> list[str]:
    trimmed = text.strip()
    found = [trimmed]
    # The fence needs a literal ```: most verdicts have none, and RE2's match drops and retakes
    # the GIL, which on a busy worker costs a thread switch per judge call (0.1-0.2 ms).
    fence = _FENCE.search(trimmed) if "```" in trimmed else None
    if fence:
        found.append(fence.group(1).strip())
    start, end = trimmed.find("{"), trimmed.rfind("}")
    if start != -1 and end > start:
        found.append(trimmed[start : end + 1])
    return found


def _first_object(text: str) -> dict[str, Any]:
    if len(text) > MAX_JSON_CHARS:
        raise JudgeParseError(
            "too_long",
            f"judge output is {len(text)} characters, over the {MAX_JSON_CHARS} a verdict may "
            "take: expected one short JSON object",
        )
    for candidate in _candidates(text):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    if not text.strip():
        raise JudgeParseError("empty", "judge output is empty: expected a JSON object")
    raise JudgeParseError(
        "no_json_object",
        "judge output holds no JSON object (tried the whole text, the first fenced block and "
        "the first '{' to the last '}')",
    )


def _feedback(obj: dict[str, Any], name: str, alias: str) -> str:
    value = obj.get(name)
    if value is None:
        value = obj.get(alias)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise JudgeParseError(
            "feedback_invalid", f"judge field {name} must be a string (got {type(value).__name__})"
        )
    return value


def _confidence(obj: dict[str, Any]) -> float | None:
    value = obj.get("confidence")
    if value is None:
        return None
    # bool is an int subclass; "confidence": true is not a probability.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JudgeParseError(
            "confidence_invalid",
            f"judge field confidence must be a number in [0, 1] (got {value!r})",
        )
    confidence = float(value)
    if not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        raise JudgeParseError(
            "confidence_invalid", f"judge field confidence must be in [0, 1] (got {value!r})"
        )
    return confidence


def parse_judge_output(text: str) -> JudgeVerdict:
    """The verdict in ``text``; raises ``JudgeParseError`` when there is none."""
    obj = _first_object(text)
    raw_winner = obj.get("winner")
    # Case and surrounding spaces carry no meaning ("a", " Tie "); anything else is invalid.
    winner = _WINNERS.get(raw_winner.strip().lower()) if isinstance(raw_winner, str) else None
    if winner is None:
        raise JudgeParseError(
            "winner_invalid", f'judge field winner must be "A", "B" or "tie" (got {raw_winner!r})'
        )
    return JudgeVerdict(
        winner=winner,
        feedback_a=_feedback(obj, "feedback_a", "critique_for_A"),
        feedback_b=_feedback(obj, "feedback_b", "critique_for_B"),
        confidence=_confidence(obj),
    )
