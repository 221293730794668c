"""Fan-out join policies: ``all``, ``any``, ``quorum:N``.

Pure. A failed branch is null. ``any`` needs one settled branch, ``quorum:N`` needs N, ``all``
needs every activated branch. An unsatisfied join carries the first failing branch's reason,
first by item index (never by completion time, which differs between runs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workflows.plan.reasons import Reason

__all__ = ["Branch", "JoinOutcome", "JoinPolicy", "join", "parse_join"]

_QUORUM = re.compile(r"^quorum:([1-9][0-9]*)$")


@dataclass(frozen=True)
class JoinPolicy:
    needed: int | None
    """Branches that must settle; None means all of them."""
    text: str


def parse_join(text: str) -> JoinPolicy:
    if text == "all":
        return JoinPolicy(None, text)
    if text == "any":
        return JoinPolicy(1, text)
    match = _QUORUM.fullmatch(text)
    if match is None:
        raise ValueError(f"join {text!r} is not all, any or quorum:N (N >= 1)")
    return JoinPolicy(int(match.group(1)), text)


@dataclass(frozen=True)
class Branch:
    ok: bool
    value: Any = None
    reason: Reason | None = None
    """The branch's failure reason when not ok."""
    detail: str = ""
    cause: str | None = None
    """Set only on a failure no join may absorb (a replay miss): the error type that fails the
    region, and with it the run."""


@dataclass(frozen=True)
class JoinOutcome:
    ok: bool
    values: list[Any]
    """One entry per activated item, in item order; a failed branch is None."""
    settled: int
    first_failure: int | None
    """The lowest item index that failed, or None."""
    reason: str | None
    """``join-unsatisfied`` when not ok."""
    branch_reason: str | None
    """The first failing branch's own reason, carried by an unsatisfied join."""
    detail: str


def join(policy: JoinPolicy, branches: Sequence[Branch]) -> JoinOutcome:
    values = [b.value if b.ok else None for b in branches]
    settled = sum(1 for b in branches if b.ok)
    needed = len(branches) if policy.needed is None else policy.needed
    failed = next((i for i, b in enumerate(branches) if not b.ok), None)
    if settled >= needed:
        return JoinOutcome(True, values, settled, failed, None, None, "")
    detail = f"join {policy.text} needs {needed} settled branch(es), {settled} of {len(branches)}"
    if failed is None:
        return JoinOutcome(False, values, settled, None, "join-unsatisfied", None, detail)
    first = branches[failed]
    return JoinOutcome(
        False,
        values,
        settled,
        failed,
        "join-unsatisfied",
        first.reason,
        f"{detail}; first failing branch: item {failed} ({first.reason}: {first.detail})",
    )
