"""Invocations start in bounded batches, one batch per workflow task.

A region of a few hundred branches would otherwise start them all in the workflow task that
opens it: every prompt rendered and defanged, every activity scheduled, in one run of workflow
code, and a task that runs past the deadlock timeout (2 s) fails and is retried forever
(TMPRL1101). The pacer lets one workflow task start at most ``STARTS_PER_TASK`` invocations and
assemble at most ``PROMPT_CHARS_PER_TASK`` characters of prompt; whoever is over waits for the
next task, which a 1 ms timer brings at once when no activity completes first. A task is told
apart by the history length at its start (the same on replay, so the batches are too).

Histories recorded before the pacer keep replaying: it asks ``workflow.patched`` only when it
would hold a start back, so a run that never needs a second batch records no marker.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.limits import PROMPT_CHARS_PER_TASK, STARTS_PER_TASK

__all__ = ["PACING_PATCH", "Pacer"]

PACING_PATCH = "plan-start-batches"
NEXT_TASK = timedelta(milliseconds=1)


class Pacer:
    def __init__(
        self, *, starts: int = STARTS_PER_TASK, chars: int = PROMPT_CHARS_PER_TASK
    ) -> None:
        self.max_starts = starts
        self.max_chars = chars
        self._task = -1
        self._starts = 0
        self._chars = 0
        self._ticking = False
        self.held = 0
        """Starts held back to a later task (tests read it)."""

    def _current(self) -> int:
        length = workflow.info().get_current_history_length()
        if length != self._task:
            self._task, self._starts, self._chars = length, 0, 0
        return length

    async def start(self) -> None:
        """Return when this workflow task may start one more invocation."""
        while True:
            task = self._current()
            if self._starts < self.max_starts and self._chars < self.max_chars:
                self._starts += 1
                return
            if not workflow.patched(PACING_PATCH):
                self._starts += 1
                return
            self.held += 1
            await self._next_task(task)

    def charge(self, chars: int) -> None:
        """Prompt text assembled in this task."""
        self._current()
        self._chars += chars

    async def _next_task(self, task: int) -> None:
        if self._ticking:
            await workflow.wait_condition(
                lambda: workflow.info().get_current_history_length() != task
            )
            return
        self._ticking = True
        try:
            await workflow.sleep(NEXT_TASK)
        finally:
            self._ticking = False
