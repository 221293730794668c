"""Effects of plan runs: probing and snapshotting the workspace a plan's steps write into."""

from activities.plan.workspace import WorkspaceActivities

__all__ = ["WorkspaceActivities"]
