"""Pipelined, incremental writes of a tournament's run directory, from workflow code.

The next phase starts while the files of the last one are written. Writes stay in order (each
waits for the one before), and the last one, when the run ends, is waited for.

Incremental (runs started since ``INCREMENTAL_ARTIFACTS_PATCH``): each row file
(``GROWING_FILES``) travels as the rows after the longest prefix the last write already sent,
and the activity appends them (the run store's ``FileAppend``), so a run's writes carry its rows
about once instead of everything so far at every phase. A row that changed (a candidate
discarded) ends the prefix, so it and the rows after it are sent again. A write that finds
fewer lines than it was told (``run.files_gap``: another worker's disk, deleted lines) or that
was cancelled makes the next write whole.

Deferred (runs started since ``DEFERRED_WRITES_PATCH``): a phase's write is taken when the phase
ends but started once the next phase's first call has landed, so the workflow task that ends a
phase schedules the next phase's calls without the snapshot's encoding and store.

Throttled (runs started since ``tournament-2026-12b``): a phase's write is skipped when the
last one was taken less than the input's ``write_interval_s`` ago in workflow time (or the run
started less than that long ago), and the next write carries its rows. A phase of model calls
takes tens of seconds, so a real run still writes at every phase at the default 10 s; a fast one
(the sim, cached replays) writes when it pauses and when it ends, where 100 quick tournaments on
one worker spent about a fifth of their worker's time on writes nobody read
(``benchmarks/many_runs.py``). A running run's progress is its query's, never its files'.

Each write carries its number (``write_seq``, with the snapshot's ``written_at`` its place in
the run's order), and the activity writes nothing over a later write's files
(``activities.tournament.write_order``): an attempt that outlives the write it was (a worker
shut down mid-write, a write cancelled with its run and superseded by the final one) still
runs to its end in its thread, and without this it would land last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.activity_contracts import FILES_GAP, HEARTBEAT_TIMEOUT
    from workflows.tournament.activity_contracts import WRITE_TOURNAMENT_ARTIFACTS
    from workflows.tournament.behaviour import DEFERRED_WRITES_PATCH, INCREMENTAL_ARTIFACTS_PATCH
    from workflows.tournament.types import GROWING_FILES, TournamentSnapshot

__all__ = [
    "ARTIFACT_RETRY_POLICY",
    "DEFERRED_WRITES_PATCH",
    "INCREMENTAL_ARTIFACTS_PATCH",
    "ArtifactWriter",
]

# A bad path is a bug, not a passing fault: do not retry it forever.
ARTIFACT_RETRY_POLICY = RetryPolicy(maximum_attempts=10, non_retryable_error_types=["ValueError"])


def _sent_before(rows: Sequence[object], sent: Sequence[object]) -> int:
    """How many leading rows are the very objects the last write sent (rows are replaced,
    never changed in place, so an unchanged row is the same object)."""
    kept = 0
    for row, old in zip(rows, sent, strict=False):
        if row is not old:
            break
        kept += 1
    return kept


def _is_gap(exc: ActivityError) -> bool:
    return getattr(exc.cause, "type", None) == FILES_GAP


class ArtifactWriter:
    def __init__(
        self,
        landed: Callable[[], int] = lambda: 0,
        in_flight: Callable[[], int] = lambda: 0,
    ) -> None:
        self.run_dir = ""
        """The run directory, once a write has answered."""
        self.incremental = False
        """Send only new rows (the workflow sets it from its patch)."""
        self.deferred = False
        """Start a write in a later activation (the workflow sets it from its patch)."""
        self.settle_pauses = False
        """Deferred: a pause's write takes its snapshot once the calls in flight at the pause
        have landed (the workflow sets it from its patch); nothing else writes while a run
        waits, so a snapshot taken at the pause would leave their rows out of its files."""
        self._landed = landed
        """How many model calls have landed so far (a count that only grows)."""
        self._in_flight = in_flight
        """How many model calls are in flight now."""
        self._pending: workflow.ActivityHandle[str] | None = None
        self._started = 0
        """Writes started so far: the next one's ``write_seq`` follows (replay recounts them)."""
        self._queued: asyncio.Task[None] | None = None
        """Deferred: the last write taken but maybe not started (each waits for the one before)."""
        self.interval: timedelta | None = None
        """Skip a write taken within this of the last (None: none skipped; the workflow sets
        it from its input and a patch)."""
        self._taken_at: datetime | None = None
        """Workflow time of the last write taken (None: none yet, the run's start counts)."""
        self._flushing = False
        self._sent: dict[str, list[object]] = {}
        """Each row list as the last write sent it (empty: the next write is whole)."""

    async def write(
        self,
        snapshot: Callable[[], TournamentSnapshot],
        *,
        wait: bool = False,
        always: bool = False,
    ) -> None:
        """Send ``snapshot()``, taken after the write before it has finished; skipped within
        ``interval`` of the last one, unless it is the run's last (``wait``) or must ``always``
        land (a pause).

        ``wait`` (the run's last write) also waits for this one; a write cancelled with the
        run is then superseded by this one instead of failing it.

        Deferred (runs started since ``DEFERRED_WRITES_PATCH``), a write that does not wait is
        taken now and started once a model call has landed after it (or at once when none is
        in flight): the activation that ends a phase then carries only the next phase's calls,
        not the snapshot's encoding and store, and the write's own work on this worker does not
        meet the next phase's first calls. Returns at once; a write that failed is raised by
        the next write, as before.
        """
        if not (wait or always) and self._too_soon():
            return
        if self.deferred and not wait:
            if self._queued is not None and self._queued.done():
                self._queued.result()  # a failed write fails the run here
            if always and self.settle_pauses:
                settled = self._landed() + self._in_flight()  # once every open call has landed
                self._queued = asyncio.create_task(
                    self._send_settled(snapshot, settled, self._queued)
                )
                return
            mark = self._landed()
            self._queued = asyncio.create_task(self._send_later(snapshot(), mark, self._queued))
            return
        if self._queued is not None:
            queued, self._queued = self._queued, None
            self._flushing = True  # it starts now, whatever it was waiting for
            try:
                await queued
            except ActivityError as exc:
                if not (wait and is_cancelled_exception(exc)):
                    raise
                self._sent = {}
            finally:
                self._flushing = False
        await self._settle_pending(wait=wait)
        self._pending = self._start(snapshot())
        if wait:
            try:
                self.run_dir = await self._pending
            except ActivityError as exc:
                if not (self.incremental and _is_gap(exc)):
                    raise
                self._sent = {}
                self.run_dir = await self._start(snapshot())
            self._pending = None

    def _too_soon(self) -> bool:
        """Whether a write now would follow the last one (or the run's start) within
        ``interval``; if not, now is the last write's time."""
        if self.interval is None:
            return False
        now = workflow.now()
        if now - (self._taken_at or workflow.info().start_time) < self.interval:
            return True
        self._taken_at = now
        return False

    async def _send_later(
        self, snap: TournamentSnapshot, mark: int, before: asyncio.Task[None] | None
    ) -> None:
        if before is not None:
            await before
        await workflow.wait_condition(
            lambda: self._flushing or self._landed() > mark or not self._in_flight()
        )
        await self._settle_pending(wait=False)
        self._pending = self._start(snap)

    async def _send_settled(
        self,
        snapshot: Callable[[], TournamentSnapshot],
        settled: int,
        before: asyncio.Task[None] | None,
    ) -> None:
        if before is not None:
            await before
        await workflow.wait_condition(
            lambda: self._flushing or self._landed() >= settled or not self._in_flight()
        )
        await self._settle_pending(wait=False)
        self._pending = self._start(snapshot())

    async def _settle_pending(self, *, wait: bool) -> None:
        """The write before has finished (a gap, or a cancel when ``wait``: the next is whole)."""
        if self._pending is None:
            return
        try:
            self.run_dir = await self._pending
        except ActivityError as exc:
            cancelled = wait and is_cancelled_exception(exc)
            if not (cancelled or (self.incremental and _is_gap(exc))):
                raise
            self._sent = {}  # what it wrote is unknown: this one sends every row
        self._pending = None

    def _start(self, snap: TournamentSnapshot) -> workflow.ActivityHandle[str]:
        self._started += 1
        sent = self._new_rows(snap) if self.incremental else snap
        return workflow.start_activity(
            WRITE_TOURNAMENT_ARTIFACTS,
            sent.model_copy(update={"write_seq": self._started}),
            result_type=str,
            start_to_close_timeout=timedelta(minutes=2),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,  # a killed worker: retried within seconds
            retry_policy=ARTIFACT_RETRY_POLICY,
        )

    def _new_rows(self, snap: TournamentSnapshot) -> TournamentSnapshot:
        """``snap`` with each row list cut to what the last write did not send."""
        update: dict[str, object] = {}
        after: dict[str, int] = {}
        for field, name in GROWING_FILES.items():
            rows: list[object] = getattr(snap, field)
            after[name] = kept = _sent_before(rows, self._sent.get(field, []))
            update[field] = rows[kept:]
            self._sent[field] = rows
        return snap.model_copy(update=update | {"after_lines": after})
