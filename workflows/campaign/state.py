"""What a running campaign knows: status, cells, records, the shared budget, its event log.

Pure (pydantic only): the ``Campaign`` workflow owns one and answers its queries from it, so
``ponder status``/``watch`` read the same numbers the workflow decides on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workflows.budget import BudgetLimits
from workflows.campaign.cell_records import leader
from workflows.campaign.cells_budget import CellBudget
from workflows.campaign.matrix import Cell
from workflows.campaign.records import RunRecord, failed
from workflows.campaign.types import (
    CampaignEvent,
    CampaignProgress,
    CampaignStatus,
    CellOutcome,
)

__all__ = ["EVENTS_PAGE", "CampaignState"]

EVENTS_PAGE = 500


@dataclass
class CampaignState:
    run_id: str
    now: Callable[[], str]
    """The workflow's clock (ISO string), injected so this module stays pure."""
    budget: CellBudget = field(default_factory=CellBudget)
    status: CampaignStatus = "running"
    cells: list[Cell] = field(default_factory=list)
    records: dict[int, RunRecord] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    unsettled: set[int] = field(default_factory=set)
    """Cells recorded ``unsettled`` at the drain bound: whatever they do later is ignored."""
    events: list[CampaignEvent] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    error: str | None = None
    blocking: str | None = None
    awaiting_cell_calls: int | None = None
    version: int = 0
    """Bumped whenever a waiting reservation might now succeed (a cell settled, an extension)."""

    def event(self, type: str, **data: Any) -> None:
        self.events.append(
            CampaignEvent(seq=len(self.events) + 1, ts=self.now(), type=type, data=data)
        )

    def fail(self, code: str, message: str) -> None:
        self.status, self.error = "failed", f"{code}: {message}"

    def ordered_records(self) -> list[RunRecord]:
        return [self.records[i] for i in sorted(self.records)]

    def failed_cells(self) -> int:
        return sum(1 for r in self.records.values() if failed(r))

    def try_reserve(self, calls: int) -> bool:
        """Reserve a cell's worst case, or say why not: an idle campaign awaits its budget."""
        if self.budget.reserve(calls):
            if self.status == "awaiting_budget":
                self.status, self.blocking, self.awaiting_cell_calls = "running", None, None
                self.event("campaign.resumed")
            return True
        if not self.running:
            limit = self.budget.blocking_limit(calls)
            self.status, self.blocking = "awaiting_budget", limit
            self.awaiting_cell_calls = calls
            self.event("campaign.awaiting_budget", limit=limit, cell_calls=calls)
        return False

    def settle(
        self, cell: Cell, reserved: int, outcome: CellOutcome, *, calls: int, failed: bool
    ) -> None:
        """Replace a cell's reservation by what it spent; a waiting cell may now fit."""
        self.budget.settle(
            reserved,
            calls=calls,
            input_tokens=outcome.input_tokens,
            output_tokens=outcome.output_tokens,
            usd=outcome.usd,
            failed=failed,
        )
        self.running.discard(cell.index)
        self.version += 1

    def unsettle(self, cell: Cell, reserved: int, record: RunRecord) -> None:
        """A running cell the drain bound gave up on: its worst case is spent (its calls may
        be paid), its ``unsettled`` record kept, and its later end ignored."""
        self.budget.settle(
            reserved, calls=reserved, input_tokens=0, output_tokens=0, usd=0.0, failed=True
        )
        self.running.discard(cell.index)
        self.unsettled.add(cell.index)
        self.records[cell.index] = record
        self.event("cell.unsettled", cell=cell.index, run_id=cell.run_id, calls=reserved)

    def record(self, cell: Cell, record: RunRecord) -> None:
        self.records[cell.index] = record
        self.event(
            "cell.finished",
            cell=cell.index,
            run_id=cell.run_id,
            score=record.score,
            failure_class=record.failure_class,
        )

    def extend(self, limits: BudgetLimits) -> None:
        self.budget.extend(limits)
        self.version += 1
        self.event("budget.extended", budget=self.budget.budget.limits.model_dump())

    def progress(self) -> CampaignProgress:
        best, best_mean = leader(list(self.records.values()))
        return CampaignProgress(
            run_id=self.run_id,
            status=self.status,
            cells_total=len(self.cells),
            cells_done=len(self.records),
            cells_running=len(self.running),
            cells_failed=self.failed_cells(),
            budget=self.budget.budget.limits,
            spent=self.budget.budget.spent,
            reserved_calls=self.budget.reserved_calls,
            blocking_limit=self.blocking,
            awaiting_cell_calls=self.awaiting_cell_calls,
            leader=best,
            leader_mean=best_mean,
            fingerprint=self.fingerprint,
            error=self.error,
            refused=self.refused[-5:],
        )

    def events_after(self, cursor: int) -> list[CampaignEvent]:
        return [e for e in self.events if e.seq > cursor][:EVENTS_PAGE]
