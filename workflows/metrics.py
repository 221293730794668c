"""Ponder's own metrics from workflow code: runs started and ended, pauses (waits for a person
or for a budget).

Recorded through the workflow's metric meter, which records nothing while a worker replays a
history: a run a restarted worker picks up is not counted again (docs/operating.md,
"Metrics"). No I/O, no clock: safe in the sandbox. Labels are bounded sets (the workflow type
as ``kind``, the outcome, the wait's state), never a run id.
"""

from __future__ import annotations

from temporalio import workflow

__all__ = [
    "PAUSES_ENDED",
    "PAUSES_STARTED",
    "RUNS_ENDED",
    "RUNS_STARTED",
    "pause_ended",
    "pause_started",
    "run_ended",
    "run_started",
]

RUNS_STARTED = "ponder_runs_started"
RUNS_ENDED = "ponder_runs_ended"
PAUSES_STARTED = "ponder_pauses_started"
PAUSES_ENDED = "ponder_pauses_ended"


def _kind() -> dict[str, str]:
    return {"kind": workflow.info().workflow_type}


def run_started() -> None:
    """A run's first execution began (a continue-as-new goes on with the same run)."""
    if workflow.info().continued_run_id is not None:
        return
    counter = workflow.metric_meter().create_counter(RUNS_STARTED, "Runs started, by kind")
    counter.add(1, _kind())


def run_ended(outcome: str) -> None:
    """A run ended: ``completed``, ``failed`` or ``cancelled``."""
    counter = workflow.metric_meter().create_counter(
        RUNS_ENDED, "Runs ended, by kind and outcome (completed, failed, cancelled)"
    )
    counter.add(1, _kind() | {"outcome": outcome})


def pause_started(state: str) -> None:
    """A run paused: it waits for a person or for budget (``state``: awaiting_input,
    awaiting_gate, awaiting_budget, ...)."""
    counter = workflow.metric_meter().create_counter(
        PAUSES_STARTED, "Pauses begun (waits for a person or a budget), by kind and state"
    )
    counter.add(1, _kind() | {"state": state})


def pause_ended(state: str) -> None:
    """The pause ``pause_started`` counted ended (answered, extended, abandoned by a revert, or
    with its run)."""
    if not workflow.in_workflow():  # closed with an evicted run, outside any activation
        return
    counter = workflow.metric_meter().create_counter(
        PAUSES_ENDED, "Pauses ended, by kind and state"
    )
    counter.add(1, _kind() | {"state": state})
