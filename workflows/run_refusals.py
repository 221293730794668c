"""A run whose directory the run store refuses ends the same way whatever its kind.

The run store refuses a write when the run's id was used by an earlier run (``run.id_in_use``)
or names no directory of its own (``run.dir_invalid``). The refusal reaches a workflow as an
``ActivityError`` around the store's coded ``ApplicationError``; every kind (Ask, Tournament,
PlanRun) fails with that coded error itself, at the top level, and writes nothing more (its
summary would be refused too).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.activity_contracts import RUN_DIR_INVALID, RUN_ID_IN_USE

__all__ = ["RUN_STORE_REFUSALS", "run_store_refusal"]

RUN_STORE_REFUSALS = frozenset({RUN_ID_IN_USE, RUN_DIR_INVALID})


def run_store_refusal(exc: BaseException) -> ApplicationError | None:
    """The run's failure when ``exc`` is the run store refusing its directory, else None."""
    if not isinstance(exc, ActivityError):
        return None
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type in RUN_STORE_REFUSALS:
        return ApplicationError(cause.message, type=cause.type, non_retryable=True)
    return None
