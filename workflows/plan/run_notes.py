"""Notes ``ponder plan validate`` prints for a valid plan: where a run will behave differently
from the reference interpreter in a way its author should know before anything runs.

Pure. One note per consumer step (``dispatch: consumer``, top level, chain member or in a flow)
whose retries or timeout are ponder's defaults:

- a failure its consumer reports is class ``transport``, retried only when ``retry.on`` lists
  ``transport`` and ``max_attempts`` allows another attempt;
- without ``timeout_ms``, the issuance is void after the default stage timeout (15 min), where
  the reference waits for its consumer without limit.
"""

from __future__ import annotations

from collections.abc import Iterator

from workflows.plan.boundaries import DEFAULT_STAGE_TIMEOUT_MS
from workflows.plan.model import AgentStep, Plan

__all__ = ["consumer_notes"]


def consumer_notes(plan: Plan) -> list[str]:
    """A note for each consumer step whose failure or timeout handling differs from the
    reference's, in plan order then each flow's (an explicit choice of both gets none)."""
    notes = []
    for where, step in _consumer_steps(plan):
        clauses = []
        retried = "transport" in step.retry.on and step.retry.max_attempts > 1
        if not retried:
            clauses.append(
                "a failure its consumer reports (class transport) is not retried: retry.on "
                f"is {list(step.retry.on)} and max_attempts {step.retry.max_attempts}; to retry "
                "it, list transport in retry.on, with max_attempts 2 or more and idempotent: true"
            )
        if step.timeout_ms is None:
            clauses.append(
                f"with no step_done within {DEFAULT_STAGE_TIMEOUT_MS} ms (15 min, the default "
                "stage timeout) its token is void and the attempt fails class timeout, where "
                "the reference waits without limit; set timeout_ms to choose"
            )
        if clauses:
            notes.append(f"{where} (dispatch: consumer): " + "; ".join(clauses))
    return notes


def _consumer_steps(plan: Plan) -> Iterator[tuple[str, AgentStep]]:
    for step in plan.steps:
        if isinstance(step, AgentStep) and step.dispatch == "consumer":
            yield f"step {step.id}", step
    for name, flow in plan.flows.items():
        for child in flow.steps:
            if isinstance(child, AgentStep) and child.dispatch == "consumer":
                yield f"flow {name} step {child.id}", child
