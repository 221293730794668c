"""Human-gate deadlines and escalation (docs/plans.md, "Gate deadlines and escalation"): the rule
and the schedule.

Pure. A human gate may carry ``deadline`` (ms after its wait opens), the ``default`` decision
the deadline takes (``approve`` | ``kill``; never ``revise``, which would loop work nobody asked
for) and ``escalate: {after_ms, notify?}`` (a flag in status and, with ``notify``, a post to a
notifier the worker declares). The validator refuses a bad combination with ``gate.deadline``;
the workflow waits on durable timers at the offsets ``schedule`` gives.

Escalation without a deadline is allowed: "tell someone after an hour, wait as long as it
takes" is a plan an author may want; ``after_ms`` must then only be in range.
"""

from __future__ import annotations

from dataclasses import dataclass

from workflows.plan.model import (
    DEFAULT_DECISIONS,
    MAX_DEADLINE_MS,
    MIN_DEADLINE_MS,
    GateStep,
    HumanGate,
    Plan,
)

__all__ = ["GateSchedule", "deadline_problems", "notifiers_named", "schedule"]


def _range(value: int) -> bool:
    return MIN_DEADLINE_MS <= value <= MAX_DEADLINE_MS


def deadline_problems(gate: HumanGate) -> list[tuple[tuple[str, ...], str]]:
    """(path under ``gate``, message with its fix) for each broken deadline rule."""
    found: list[tuple[tuple[str, ...], str]] = []
    span = f"{MIN_DEADLINE_MS} ms (1 s) to {MAX_DEADLINE_MS} ms (90 days)"
    if gate.deadline is not None and not _range(gate.deadline):
        found.append(
            (("deadline",), f"deadline={gate.deadline} is outside {span}; fix: give ms in range")
        )
    if gate.default is not None and gate.default not in DEFAULT_DECISIONS:
        why = (
            "revise would re-run work nobody asked for"
            if gate.default == "revise"
            else "it is not a decision a deadline takes"
        )
        found.append(
            (
                ("default",),
                f"default {gate.default!r}: {why}; fix: approve or kill",
            )
        )
    if gate.deadline is not None and gate.default is None:
        found.append(
            (
                ("default",),
                "a deadline needs the decision it takes; fix: add default: approve or "
                "default: kill",
            )
        )
    if gate.default is not None and gate.deadline is None:
        found.append(
            (
                ("deadline",),
                f"default {gate.default!r} has no deadline to apply at; fix: add deadline "
                "(ms), or drop default",
            )
        )
    escalate = gate.escalate
    if escalate is not None:
        if not _range(escalate.after_ms):
            found.append(
                (
                    ("escalate", "after_ms"),
                    f"after_ms={escalate.after_ms} is outside {span}; fix: give ms in range",
                )
            )
        elif gate.deadline is not None and escalate.after_ms >= gate.deadline:
            found.append(
                (
                    ("escalate", "after_ms"),
                    f"after_ms={escalate.after_ms} is not before the deadline "
                    f"({gate.deadline} ms): the default would decide first; fix: escalate "
                    "earlier",
                )
            )
    return found


@dataclass(frozen=True)
class GateSchedule:
    """Offsets (ms after the wait opens) of a gate's timers; None: that timer is not set."""

    escalate_ms: int | None
    deadline_ms: int | None
    default: str | None

    @property
    def timed(self) -> bool:
        return self.escalate_ms is not None or self.deadline_ms is not None


def schedule(gate: HumanGate) -> GateSchedule:
    escalate = gate.escalate.after_ms if gate.escalate is not None else None
    return GateSchedule(escalate_ms=escalate, deadline_ms=gate.deadline, default=gate.default)


def notifiers_named(plan: Plan) -> dict[str, list[str]]:
    """Notifier name -> the gates whose escalation posts to it (preflight checks the worker
    declares each: ``escalation-unroutable``)."""
    named: dict[str, list[str]] = {}
    for step in plan.steps:
        escalate = step.gate.escalate if isinstance(step, GateStep) and step.gate else None
        if escalate is not None and escalate.notify is not None:
            named.setdefault(escalate.notify, []).append(step.id)
    return named
