"""What a plan run records: the trace (monotonic seq, caused-by edges), step states and cost.

Pure (the clock is injected), so the workflow, its queries and the tests share one record.
``trace.jsonl`` holds every event; ``cost.json`` is one run-cost row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workflows.plan.reasons import Reason
from workflows.plan.run_types import PlanEvent

__all__ = ["CallRow", "PlanFailure", "PlanRecord", "TerminalRoute"]

MAX_REFUSED_SHOWN = 10


class PlanFailure(Exception):
    """The run fails with ``reason``, a member of the closed enum and nothing else.

    What is refused before the run opens is not a plan reason and never a ``PlanFailure``: the
    platform's codes for input (``input.invalid``: input that does not decode, a run argument
    that does not parse or fails its pause's schema, ``run.id_invalid``) and ``plan-invalid``
    (the document does not validate)."""

    def __init__(
        self, reason: Reason, detail: str, *, step: str | None = None, cause: str | None = None
    ) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: Reason = reason
        self.detail = detail
        self.step = step
        self.cause = cause
        """The error type underneath a failed call or child (``provider.replay_miss``, ...): the
        closed reason keeps only its class, and a caller (a campaign cell) may need the code."""


class TerminalRoute(Exception):
    """A model gate's ``terminal:<label>`` route: the run ends completed with that route."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.label = label


@dataclass
class CallRow:
    invocation: str
    step: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    latency_ms: float = 0.0
    outcome: str = "ok"
    simulated: bool = False
    priced: bool = True
    """False: the model has no price, so ``usd`` (0) is unknown, not free."""
    model_calls: int = 1
    """Model calls behind the invocation: a tournament step is one invocation of many calls."""


@dataclass
class PlanRecord:
    now: Callable[[], str]
    events: list[PlanEvent] = field(default_factory=list)
    steps: dict[str, str] = field(default_factory=dict)
    calls: list[CallRow] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    waivers: list[str] = field(default_factory=list)
    last_settled: dict[str, int] = field(default_factory=dict)
    """Step id -> seq of its last ``settled`` event (the caused-by edge of what follows it)."""

    def event(self, type: str, *, caused_by: list[int] | None = None, **data: Any) -> int:
        seq = len(self.events) + 1
        self.events.append(
            PlanEvent(seq=seq, ts=self.now(), type=type, data=data, caused_by=caused_by or [])
        )
        return seq

    def refuse(self, control: str, reason: Reason | str, message: str) -> None:
        """A signal whose content is refused: visible in ``status`` and ``events``. ``reason``
        is a control reason of the enum, or the platform's ``input.invalid`` for a message
        that does not decode."""
        self.refused = [*self.refused, f"{control}: {reason}: {message}"][-MAX_REFUSED_SHOWN:]
        self.event("control.refused", control=control, reason=str(reason), message=message)

    def causes(self, deps: list[str]) -> list[int]:
        return [self.last_settled[d] for d in deps if d in self.last_settled]

    def trace_jsonl(self, start: int = 0) -> str:
        """The trace's lines from event ``start`` on (0: the whole trace)."""
        return "".join(e.model_dump_json() + "\n" for e in self.events[start:])

    def cost_json(
        self,
        *,
        run_id: str,
        plan: str,
        outcome: str,
        wall_ms: int,
        waited_ms: int = 0,
        elapsed_ms: int | None = None,
    ) -> str:
        """``wall_ms`` is the wall clock the budget charged (agent time: the ``wall spent`` of
        ``status``); ``elapsed_ms`` the run's elapsed time, its waits for a person included;
        ``waited_ms`` those waits alone."""
        row = {
            "run_id": run_id,
            "plan": plan,
            "outcome": outcome,
            "steps": sum(1 for s in self.steps.values() if s == "settled"),
            "invocations": len(self.calls),
            "calls": sum(c.model_calls for c in self.calls),
            "input_tokens": sum(c.input_tokens for c in self.calls),
            "output_tokens": sum(c.output_tokens for c in self.calls),
            "usd": round(sum(c.usd for c in self.calls), 6),
            "unpriced_invocations": sum(1 for c in self.calls if not c.priced),
            "wall_ms": wall_ms,
            "elapsed_ms": wall_ms + waited_ms if elapsed_ms is None else elapsed_ms,
            "waited_ms": waited_ms,
            "simulated": bool(self.calls) and all(c.simulated for c in self.calls),
        }
        return json.dumps(row, indent=2) + "\n"
