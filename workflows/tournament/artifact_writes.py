"""Pipelined writes of a tournament's run directory, from workflow code.

The next phase starts while the files of the last one are written. Writes stay in order (each
waits for the one before), and the last one, when the run ends, is waited for.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from activities.heartbeats import HEARTBEAT_TIMEOUT
    from activities.tournament.artifacts import WRITE_TOURNAMENT_ARTIFACTS
    from workflows.tournament.types import TournamentSnapshot

__all__ = ["ARTIFACT_RETRY_POLICY", "ArtifactWriter"]

# A bad path is a bug, not a passing fault: do not retry it forever.
ARTIFACT_RETRY_POLICY = RetryPolicy(maximum_attempts=10, non_retryable_error_types=["ValueError"])


class ArtifactWriter:
    def __init__(self) -> None:
        self.run_dir = ""
        """The run directory, once a write has answered."""
        self._pending: workflow.ActivityHandle[str] | None = None

    async def write(
        self, snapshot: Callable[[], TournamentSnapshot], *, wait: bool = False
    ) -> None:
        """Send ``snapshot()``, taken after the write before it has finished.

        ``wait`` (the run's last write) also waits for this one; a write cancelled with the
        run is then superseded by this one instead of failing it.
        """
        if self._pending is not None:
            try:
                self.run_dir = await self._pending
            except ActivityError as exc:
                if not (wait and is_cancelled_exception(exc)):
                    raise
            self._pending = None
        self._pending = workflow.start_activity(
            WRITE_TOURNAMENT_ARTIFACTS,
            snapshot(),
            result_type=str,
            start_to_close_timeout=timedelta(minutes=2),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,  # a killed worker: retried within seconds
            retry_policy=ARTIFACT_RETRY_POLICY,
        )
        if wait:
            self.run_dir = await self._pending
            self._pending = None
