"""Control input for a running plan: resume arguments and human-gate decisions.

Pure, so an update's validator and the signal form's handler apply the same rule and a refused
input never enters history (update) or is recorded as ``control.refused`` (signal).

- Resume arguments: the first value for a key wins; the same value again is fine; a different
  value for a key already given is refused (``stale-input-refused``): the step it satisfied has
  already run on the first one.
- Gate decisions: ``approve`` | ``revise`` | ``kill`` for a pending gate with its current token;
  an unknown step, a bad decision and a stale token are refused, each with its reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workflows.json_schemas import MAX_VALUE_BYTES
from workflows.plan.reasons import Reason

__all__ = ["DECISIONS", "Refusal", "check_gate_decision", "merge_resume_args", "parse_resume_value"]

DECISIONS = ("approve", "revise", "kill")


@dataclass(frozen=True)
class Refusal:
    reason: Reason
    message: str


def merge_resume_args(
    consumed: Mapping[str, Any], supplied: Mapping[str, Any]
) -> tuple[dict[str, Any], Refusal | None]:
    """``consumed`` plus ``supplied``; on a conflict, ``consumed`` unchanged and the refusal."""
    merged = dict(consumed)
    for key, value in supplied.items():
        if key in merged and merged[key] != value:
            return dict(consumed), Refusal(
                Reason.STALE_INPUT_REFUSED,
                f"{key} was already given as {json.dumps(merged[key])}; a different value "
                f"({json.dumps(value)}) would re-decide a step that already ran on it",
            )
        merged[key] = value
    return merged, None


def parse_resume_value(raw: Any, *, typed: bool) -> tuple[Any, str | None]:
    """A resume value as the pause step declares it: with a schema, JSON of at most
    ``MAX_VALUE_BYTES`` (a string is parsed; the caller then checks the schema); without one, a
    string. Returns (value, problem)."""
    if not typed:
        return (raw, None) if isinstance(raw, str) else (None, "give the value as a string")
    if not isinstance(raw, str):
        return raw, None  # already JSON; its size is checked with the schema
    size = len(raw.encode())
    if size > MAX_VALUE_BYTES:
        return None, f"the value is {size} bytes, over the {MAX_VALUE_BYTES} limit for a JSON value"
    try:
        return json.loads(raw), None
    except ValueError as exc:
        return None, f"the value must be JSON for this pause ({exc})"


def check_gate_decision(
    pending: Mapping[str, str],
    *,
    step: str,
    decision: str,
    token: str,
    expired: Mapping[str, str] | None = None,
) -> Refusal | None:
    """``pending`` maps each waiting gate's step id to its current token; ``expired`` each gate
    its deadline decided to the token that deadline voided (a late decision is stale)."""
    if step not in pending and expired and step in expired:
        return Refusal(
            Reason.STALE_GATE_TOKEN,
            f"the deadline of gate {step!r} passed and its default decision applied; the "
            "token is void (the gate is no longer waiting)",
        )
    if step not in pending:
        waiting = ", ".join(sorted(pending)) or "none"
        return Refusal(
            Reason.UNKNOWN_STEP, f"{step!r} is not a pending gate (pending gates: {waiting})"
        )
    if decision not in DECISIONS:
        return Refusal(
            Reason.INVALID_DECISION,
            f"decision {decision!r} is not one of {', '.join(DECISIONS)}",
        )
    if token != pending[step]:
        return Refusal(
            Reason.STALE_GATE_TOKEN,
            f"the token for {step!r} is stale (the gate was reopened); read the current one "
            "from status",
        )
    return None
