"""Run ids: the one rule for what may name a run (and its directory under the run store).

Pure (no I/O, no Temporal), so workflows can refuse a bad id before they schedule anything, the
run store can refuse it before it touches a path, and the CLI can refuse it before it connects.
"""

from __future__ import annotations

import re

__all__ = ["RUN_ID", "RUN_ID_INVALID", "RunIdInvalid", "check_run_id", "run_id_problem"]

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RUN_ID_INVALID = "run.id_invalid"


class RunIdInvalid(ValueError):
    """A run id that breaks the rule; ``code`` is the error code it travels under."""

    code = RUN_ID_INVALID


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
