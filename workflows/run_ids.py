"""Run ids: the one rule for what may name a run (and its directory under the run store).

Pure (no I/O, no Temporal), so workflows can refuse a bad id before they schedule anything, the
run store can refuse it before it touches a path, and the CLI can refuse it before it connects.

A run's id is its workflow id, and its directory is ``<runs_dir>/<workflow id>``: a ``run_id``
in workflow input may only repeat the workflow id (:func:`foreign_run_id_problem`), and an
activity writes only the directory of the workflow that scheduled it or of that workflow's
children, whose ids it derives as ``<workflow id>.<suffix>`` (:func:`writer_problem`). So one
run can never overwrite another run's files, whatever its input says.
"""

from __future__ import annotations

import re

from workflows.errors import PonderError

__all__ = [
    "RUN_ID",
    "RUN_ID_INVALID",
    "RUN_NOT_FOUND",
    "RunIdInvalid",
    "check_run_id",
    "foreign_run_id_problem",
    "run_id_problem",
    "writer_problem",
]

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RUN_ID_INVALID = "run.id_invalid"
RUN_NOT_FOUND = "run.not_found"
"""No run has this id (on the server, or in the run store for what reads only files)."""


class RunIdInvalid(PonderError, ValueError):
    """A run id that breaks the rule; ``code`` is the error code it travels under."""

    def __init__(self, message: str) -> None:
        super().__init__(RUN_ID_INVALID, message)


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a run (field, rule, fix), or None if it can."""
    if RUN_ID.fullmatch(run_id):
        return None
    return (
        f"run id {run_id!r} must match [A-Za-z0-9][A-Za-z0-9._-]* and be at most 128 "
        "characters (no slashes, no leading dot): choose another"
    )


def check_run_id(run_id: str) -> str:
    """``run_id`` itself, or RunIdInvalid saying what is wrong with it."""
    problem = run_id_problem(run_id)
    if problem is not None:
        raise RunIdInvalid(problem)
    return run_id


def foreign_run_id_problem(workflow_id: str, run_id: str | None) -> str | None:
    """Why input naming run ``run_id`` cannot run as workflow ``workflow_id``, or None.

    ``None`` (left out) and the workflow id itself are fine; any other id would send this run's
    writes into another run's directory."""
    if run_id is None or run_id == workflow_id:
        return None
    return (
        f"run_id: {run_id!r} is not this run's workflow id {workflow_id!r}: a run writes only "
        "its own directory, named by its workflow id; leave run_id out, or start the workflow "
        f"with id {run_id!r}"
    )


def writer_problem(workflow_id: str | None, run_id: str) -> str | None:
    """Why workflow ``workflow_id`` may not write run ``run_id``'s directory, or None.

    A workflow writes its own directory and its children's (``<workflow id>.<suffix>``: a
    campaign's cells, a plan step's tournament), nothing else; an activity that runs outside
    any workflow writes none."""
    if workflow_id is None:
        return f"run {run_id!r}: an activity outside a workflow writes no run directory"
    if run_id == workflow_id or run_id.startswith(f"{workflow_id}."):
        return None
    return (
        f"workflow {workflow_id!r} may not write run {run_id!r}'s directory: a workflow writes "
        f"only its own run directory ({workflow_id!r}) and its children's "
        f"({workflow_id!r} + '.<suffix>')"
    )
