"""Effects of plan runs: the workspace a plan's steps use (held to the roots the worker
declares, probed, snapshotted) and the run directory's files, report.html among them."""

from activities.plan.workspace import WorkspaceActivities

__all__ = ["WorkspaceActivities"]
