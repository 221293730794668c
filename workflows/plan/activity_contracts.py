"""The plan activities' registered names, the failure codes a ``PlanRun`` branches on, and the
one input model that had no home on this side (the rest are ``run_types``, ``check_types``,
``training``, ``worktrees`` and ``checkpoints``).

The ``PlanRun`` workflow schedules these by name and never imports the activity modules (they
load httpx, git, the CEL child process and the run store's file I/O). Names, codes and field
names are in saved histories: never rename one, and add fields only with defaults.

Pure: pydantic and the standard library only.
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = [
    "APPEND_TRAINING_PAIR",
    "CAPTURE_IO",
    "CHECK_LANDED",
    "CHECK_NOTIFIERS",
    "CHECK_PATHS",
    "EVALUATE_CEL",
    "NOTIFY_GATE",
    "NOTIFY_NOT_RETRYABLE",
    "NOTIFY_REFUSED",
    "NOTIFY_UNKNOWN",
    "PROBE_FILES",
    "READ_CHECKPOINT",
    "SNAPSHOT_WRITES",
    "WORKTREE_ADD",
    "WORKTREE_BASE",
    "WORKTREE_FINISH",
    "WORKTREE_LAND",
    "WORKTREE_MERGE",
    "WORKTREE_PROBE",
    "WRITE_PLAN_FILES",
    "ReadCheckpointInput",
]

# Workspace (activities.plan.workspace): declared paths, write snapshots, what landed.
CHECK_PATHS = "plan_check_paths"
SNAPSHOT_WRITES = "plan_snapshot_writes"
CHECK_LANDED = "plan_check_landed"

# Worktrees of a fan-out (activities.plan.worktrees).
WORKTREE_PROBE = "plan_worktree_probe"
WORKTREE_BASE = "plan_worktree_base"
WORKTREE_ADD = "plan_worktree_add"
WORKTREE_FINISH = "plan_worktree_finish"
WORKTREE_MERGE = "plan_worktree_merge"
WORKTREE_LAND = "plan_worktree_land"

# Checks (activities.plan.cel, activities.plan.probes).
EVALUATE_CEL = "plan_evaluate_cel"
PROBE_FILES = "plan_probe_files"

# The run directory (activities.plan.files).
WRITE_PLAN_FILES = "plan_write_run_files"
READ_CHECKPOINT = "plan_read_checkpoint"

# Training capture (activities.plan.training).
APPEND_TRAINING_PAIR = "append_training_pair"
CAPTURE_IO = "capture.io"
"""The failure type of a write the file system refused (``capture.failed`` reason ``io``)."""

# Gate escalation (activities.plan.notify).
CHECK_NOTIFIERS = "plan_check_notifiers"
NOTIFY_GATE = "plan_notify_gate"
NOTIFY_UNKNOWN = "notify.unknown"
NOTIFY_REFUSED = "notify.refused"
NOTIFY_NOT_RETRYABLE = [NOTIFY_UNKNOWN, NOTIFY_REFUSED]
"""Failure types a retry cannot change: the notifier is gone, or it answered 3xx/4xx."""


class ReadCheckpointInput(BaseModel):
    run_id: str
    label: str
    token: str | None = None
    """The source run's read token (checked before its directory is read)."""
