"""Who gets the next free CEL evaluator, and how much evaluator time each run has spent.

Pure (no I/O, no asyncio): ``activities.plan.cel`` owns the children and the waiting, this
module only decides. One worker serves many people's runs, so a run's costly expressions must
cost that run and nobody else:

- **a budget per run**: the evaluator time a run has used (binding its values plus evaluating
  its expressions, measured by the worker) is summed; once it reaches ``RUN_BUDGET_SECONDS`` the
  run's further expressions are refused without an evaluator (``expr-too-costly``);
- **the least served run first**: when an evaluator frees up, the waiting request of the run
  that has spent the least goes next (ties: the one waiting longest), so a run that has spent
  nothing yet (an innocent ``1 + 1``) waits at most for the expressions already running;
- **bounded state**: at most ``MAX_RUNS`` runs are remembered, the least recently used
  forgotten first (never one with a request waiting). A forgotten run that comes back starts
  again from nothing: it had been idle while thousands of others evaluated.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from typing import Generic, TypeVar

__all__ = ["MAX_RUNS", "RUN_BUDGET_SECONDS", "FairShare"]

RUN_BUDGET_SECONDS = 20.0
"""Evaluator time one run may use in all; a plan's ordinary expressions take milliseconds."""
MAX_RUNS = 4096

T = TypeVar("T")


class FairShare(Generic[T]):
    """Per-run spending and per-run queues of waiting items (``T``: whatever a waiter is)."""

    def __init__(
        self, *, budget_seconds: float = RUN_BUDGET_SECONDS, max_runs: int = MAX_RUNS
    ) -> None:
        self.budget_seconds = budget_seconds
        self.max_runs = max_runs
        self._spent: OrderedDict[str, float] = OrderedDict()
        self._queues: dict[str, deque[tuple[int, T]]] = {}
        self._order = itertools.count()

    def spent(self, run: str) -> float:
        return self._spent.get(run, 0.0)

    def exhausted(self, run: str) -> bool:
        return self.spent(run) >= self.budget_seconds

    def charge(self, run: str, seconds: float) -> None:
        self._spent[run] = self.spent(run) + max(seconds, 0.0)
        self._spent.move_to_end(run)
        self._forget()

    @property
    def runs(self) -> int:
        """Runs remembered (spending or waiting)."""
        return len(self._spent.keys() | self._queues.keys())

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def enqueue(self, run: str, item: T) -> None:
        self._queues.setdefault(run, deque()).append((next(self._order), item))
        if run in self._spent:
            self._spent.move_to_end(run)

    def remove(self, run: str, item: T) -> None:
        """Take ``item`` out of its run's queue (it gave up waiting); absent is fine."""
        queue = self._queues.get(run)
        if queue is None:
            return
        for entry in queue:
            if entry[1] is item:
                queue.remove(entry)
                break
        if not queue:
            del self._queues[run]
            self._forget()

    def pop(self) -> T | None:
        """The next item to serve: the head of the least served run's queue."""
        if not self._queues:
            return None
        run = min(self._queues, key=lambda r: (self.spent(r), self._queues[r][0][0]))
        queue = self._queues[run]
        _, item = queue.popleft()
        if not queue:
            del self._queues[run]
            self._forget()
        return item

    def _forget(self) -> None:
        if len(self._spent) <= self.max_runs:
            return
        for run in list(self._spent):
            if len(self._spent) <= self.max_runs:
                return
            if run not in self._queues:
                del self._spent[run]
