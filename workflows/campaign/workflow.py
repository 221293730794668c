"""``Campaign``: variants x scenarios x seeds, each cell a child workflow, then the report.

    preflight (run id, document, configs, route) -> fingerprint -> cells in variant-major
    order, at most ``concurrency`` at once, each reserving its worst case on the shared budget
    -> settle each (capture integrity, spend, score) -> its record -> report

A cell failure (``runner_threw``, ``integrity_failed``, ``scorer_failed``) is recorded and the
campaign goes on. A genuine error (an invalid record, an integrity failure under ``throw``)
stops new cells, cancels and drains the running ones (their spend is settled and recorded),
writes the artifacts and fails the campaign with the error's code. An owner cancel does the
same and ends CANCELED with the partial report written. The drain waits at most the document's
``drain_timeout_s``: a cell still draining then is recorded ``unsettled`` (its worst case
counted as spent) and the campaign ends without it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.budget import BudgetLimits
    from workflows.campaign.activity_calls import settle_cell, write_artifacts
    from workflows.campaign.cell_records import RecordInvalid, build_record, unsettled_record
    from workflows.campaign.cells_budget import CellBudget
    from workflows.campaign.children import CHILD_ENDED, ChildFailure, child_failure, run_child
    from workflows.campaign.configs import cell_calls, prompt_hash
    from workflows.campaign.document import CampaignDocument, JudgeScorer
    from workflows.campaign.judging import judge
    from workflows.campaign.matrix import Cell, cells, fingerprint
    from workflows.campaign.preflight import preflight
    from workflows.campaign.state import CampaignState
    from workflows.campaign.types import (
        CampaignArtifactsInput,
        CampaignArtifactsResult,
        CampaignEvent,
        CampaignProgress,
        CampaignResult,
        CellOutcome,
        SettleCellInput,
    )
    from workflows.completion import complete_despite_cancel
    from workflows.control_verbs import control_verb
    from workflows.errors import PonderError
    from workflows.inputs import InputInvalid
    from workflows.ledger.types import ledger_wait
    from workflows.ledger.waits import LedgerRoom
    from workflows.names import (
        CAMPAIGN,
        QUERY_EVENTS,
        QUERY_PROGRESS,
        SIGNAL_EXTEND_BUDGET,
        SIGNAL_LEDGER_ROOM,
        UPDATE_EXTEND_BUDGET,
    )
    from workflows.provider_errors import ReplayMissError
    from workflows.raw_input import NO_INPUT, decode_raw, input_failure, without_capability
    from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult

__all__ = ["CampaignWorkflow"]

INTEGRITY_FAILED = "integrity.failed"
DRAIN_BOUND_PATCH = "campaign-drain-bound"
"""Histories from before the drain bound waited for every running cell, with no timer."""
JUDGE_LEDGER_WAITS_PATCH = "campaign-judge-ledger-waits"
"""Campaigns on a ledger recorded before it failed a judge call the ledger refused
(``ledger.spent``); now the call waits for room."""
REPLAY_MISS = ReplayMissError("").error_type


@dataclass(frozen=True)
class ChildRun:
    """How a cell's child ended: with its answer, with a failure, or cancelled (neither)."""

    answer: str | None = None
    failure: ChildFailure | None = None
    cancelled: bool = False

    @property
    def error(self) -> str | None:
        """The cell record's error: ``"<code>: <message>"`` of the child's failure."""
        return self.failure.text if self.failure is not None else None


class GenuineError(PonderError):
    """Stops the campaign: not a cell's failure but the campaign's own. The campaign fails
    with its ``code`` as the ``ApplicationError`` type and its ``message`` alone."""


@workflow.defn(name=CAMPAIGN)
class CampaignWorkflow:
    @workflow.init
    def __init__(self, raw: object = NO_INPUT, *extra: object) -> None:
        # Decoded here (never raising), refused in run; queries answer either way.
        decoded = decode_raw(CampaignDocument, raw, extra)
        if isinstance(decoded, CampaignDocument):  # its cells would each refuse it
            decoded = without_capability(decoded) or decoded
        self.input_error = decoded if isinstance(decoded, InputInvalid) else None
        self.doc = decoded if isinstance(decoded, CampaignDocument) else None
        self.state = CampaignState(
            run_id=workflow.info().workflow_id,
            now=lambda: workflow.now().isoformat(),
            budget=CellBudget.of(self.doc.budget) if self.doc else CellBudget(),
        )
        self.http_variants: set[str] = set()
        self.children: dict[int, asyncio.Task[str | None]] = {}
        self.in_flight: dict[int, tuple[datetime, int]] = {}
        """Running cells: when each started and the calls it reserved."""
        self.genuine: GenuineError | None = None
        self.cancelling = False
        self.started_at = ""
        self.ledger_room = LedgerRoom(
            paused=self._ledger_paused,
            resumed=self._ledger_resumed,
            stopping=lambda: self.genuine is not None or self.cancelling,
        )
        """Judge calls its shared ledger (``calls.ledger``) refused wait here for room."""
        self.judge_waits = False

    # -- the run -------------------------------------------------------------------------

    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> CampaignResult:
        state = self.state
        self.started_at = workflow.now().isoformat()
        if self.input_error is not None or self.doc is None:
            assert self.input_error is not None
            state.status, state.error = "failed", self.input_error.message
            raise input_failure(self.input_error)
        doc = self.doc
        # Asked in the first task, and only of a campaign on a ledger: others record no marker.
        self.judge_waits = doc.calls.ledger is not None and workflow.patched(
            JUDGE_LEDGER_WAITS_PATCH
        )
        try:
            self.http_variants = await preflight(doc, state.run_id)
        except ApplicationError as exc:
            state.fail(exc.type or "error", exc.message)
            raise
        state.fingerprint = fingerprint(doc)
        state.cells = cells(doc, state.run_id)
        state.event("campaign.started", cells=len(state.cells), fingerprint=state.fingerprint)
        try:
            await self._run_cells(doc)
        except asyncio.CancelledError:
            state.status = "cancelled"
            state.event("campaign.cancelled")
            await self._write()
            raise asyncio.CancelledError() from None
        if self.genuine is not None:
            state.fail(self.genuine.code, self.genuine.message)
            state.event("campaign.failed", error=state.error)
            await self._write()
            raise ApplicationError(self.genuine.message, type=self.genuine.code, non_retryable=True)
        written = await complete_despite_cancel(self._complete())
        return CampaignResult(
            run_id=state.run_id,
            status="completed",
            fingerprint=state.fingerprint,
            cells=len(state.records),
            failed_cells=state.failed_cells(),
            decisions=written.decisions,
            recommendation=written.recommendation,
            recommended_variant=written.recommended_variant,
            spent=state.budget.budget.spent,
            run_dir=written.run_dir,
        )

    async def _complete(self) -> CampaignArtifactsResult:
        """Every cell has settled: write the final report and let the handlers finish."""
        self.state.status = "completed"
        written = await self._write()
        self.state.event("campaign.completed", recommendation=written.recommendation)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return written

    async def _run_cells(self, doc: CampaignDocument) -> None:
        """``concurrency`` lanes take the cells in order, so at most that many run at once."""
        pending = iter(self.state.cells)

        async def lane() -> None:
            while self.genuine is None and not self.cancelling:
                cell = next(pending, None)
                if cell is None:
                    return
                try:
                    await self._run_cell(doc, cell)
                except GenuineError as exc:
                    self._stop(exc)

        width = min(doc.concurrency, len(self.state.cells))
        lanes = [asyncio.create_task(lane()) for _ in range(width)]
        try:
            # Not gather: an owner cancel must reach this await only, so the lanes keep going
            # long enough to record the cells they cancel (their spend) before the run ends.
            # A genuine error wakes it too: the drain that follows is bounded.
            await workflow.wait_condition(
                lambda: self.genuine is not None or all(lane.done() for lane in lanes)
            )
        except asyncio.CancelledError:
            self.cancelling = True
            self.state.event("campaign.cancelling")
            self._cancel_children()
            await self._drain(doc, lanes)
            raise
        await self._drain(doc, lanes)
        for finished in lanes:
            if finished.done():
                finished.result()  # an unforeseen error in a lane is a bug: fail the task

    async def _drain(self, doc: CampaignDocument, lanes: list[asyncio.Task[None]]) -> None:
        """Wait for the lanes (their cells settle and are recorded), at most the drain bound
        once stopping; then record every cell still running as ``unsettled``."""
        if all(lane.done() for lane in lanes):
            return
        if not workflow.patched(DRAIN_BOUND_PATCH):
            await workflow.wait(lanes)
            return
        try:
            await workflow.wait_condition(
                lambda: all(lane.done() for lane in lanes),
                timeout=timedelta(seconds=doc.drain_timeout_s),
                timeout_summary="campaign drain bound",
            )
        except TimeoutError:
            state = self.state
            for index in sorted(state.running):
                cell = state.cells[index]
                started, reserved = self.in_flight[index]
                wall_ms = (workflow.now() - started).total_seconds() * 1000
                sent = prompt_hash(doc.variant(cell.variant), task=doc.scenario(cell.scenario).task)
                record = unsettled_record(
                    doc, cell, calls=reserved, wall_ms=wall_ms, prompt_hash=sent
                )
                state.unsettle(cell, reserved, record)
            state.event("campaign.drain_timeout", unsettled=len(state.unsettled))

    def _cancel_children(self) -> None:
        for task in self.children.values():
            task.cancel()
        self.state.version += 1

    def _stop(self, error: GenuineError) -> None:
        """A genuine error: no new cells; cancel the running ones (they drain and record)."""
        if self.genuine is None:
            self.genuine = error
            self.state.event("campaign.stopping", error=f"{error.code}: {error.message}")
            self._cancel_children()

    async def _reserve(self, calls: int) -> bool:
        """Wait until the shared budget takes this cell's worst case; False once stopping."""
        state = self.state
        while not state.try_reserve(calls):
            seen = state.version
            await workflow.wait_condition(lambda seen=seen: state.version != seen)  # type: ignore[misc]
            if self.genuine is not None or self.cancelling:
                return False
        return True

    async def _run_cell(self, doc: CampaignDocument, cell: Cell) -> None:
        """Reserve, run the child, settle (capture, spend, score), record; raise if genuine.

        A cell the drain bound gave up on (``unsettled``) was recorded already: it stops at the
        next step."""
        reserved = cell_calls(doc.variant(cell.variant), doc.scenario(cell.scenario))
        if not await self._reserve(reserved):
            return
        started = self._open(cell, reserved)
        child = await self._run_child(doc, cell, reserved)
        if cell.index in self.state.unsettled:
            return
        outcome = await self._settle(doc, cell, child)
        if cell.index in self.state.unsettled:
            return
        self._record(doc, cell, child, outcome, reserved=reserved, started=started)
        self._raise_if_genuine(doc, cell, child, outcome)

    def _open(self, cell: Cell, reserved: int) -> datetime:
        """The cell runs from now, holding ``reserved`` calls of the shared budget."""
        self.state.running.add(cell.index)
        started = workflow.now()
        self.in_flight[cell.index] = (started, reserved)
        return started

    async def _run_child(self, doc: CampaignDocument, cell: Cell, reserved: int) -> ChildRun:
        """The cell's child workflow to its end: its answer, or how it failed or was cancelled."""
        task = asyncio.create_task(run_child(doc, cell, reserved))
        self.children[cell.index] = task
        try:
            return ChildRun(answer=await task)
        except CHILD_ENDED as exc:
            failure = child_failure(exc, stopping=self.cancelling or self.genuine is not None)
            return ChildRun(failure=failure, cancelled=failure is None)
        finally:
            self.children.pop(cell.index, None)

    async def _settle(self, doc: CampaignDocument, cell: Cell, child: ChildRun) -> CellOutcome:
        """What the cell left: its capture checked, its spend and its score (a judge's, when
        the scenario is judged and the child answered)."""
        variant, scenario = doc.variant(cell.variant), doc.scenario(cell.scenario)
        scorer = scenario.scorer
        judged = isinstance(scorer, JudgeScorer) and not child.cancelled and child.error is None
        outcome = await settle_cell(
            SettleCellInput(
                run_id=cell.run_id,
                kind=variant.kind,
                scorer=scorer,
                child_failed=child.cancelled or child.error is not None,
                http=variant.id in self.http_variants,
                return_answer=judged,
                answer=child.answer,
            )
        )
        if isinstance(scorer, JudgeScorer) and judged and outcome.answer is not None:
            outcome = await judge(
                scorer,
                task=scenario.task,
                cell=cell,
                outcome=outcome,
                calls=doc.calls,
                ledger_room=self.ledger_room if self.judge_waits else None,
            )
        return outcome

    def _record(
        self,
        doc: CampaignDocument,
        cell: Cell,
        child: ChildRun,
        outcome: CellOutcome,
        *,
        reserved: int,
        started: datetime,
    ) -> None:
        """Settle the cell's spend on the shared budget and keep its record (an invalid record
        stops the campaign)."""
        state = self.state
        self.in_flight.pop(cell.index, None)
        wall_ms = (workflow.now() - started).total_seconds() * 1000
        calls = outcome.calls if outcome.exists else (reserved if child.cancelled else 0)
        state.settle(cell, reserved, outcome, calls=calls, failed=child.error is not None)
        variant, scenario = doc.variant(cell.variant), doc.scenario(cell.scenario)
        try:
            record = build_record(
                doc,
                cell,
                outcome,
                calls=calls,
                wall_ms=wall_ms,
                child_error=child.error,
                cancelled=child.cancelled,
                prompt_hash=prompt_hash(variant, task=scenario.task),
            )
        except RecordInvalid as exc:
            raise GenuineError(exc.code, str(exc)) from None
        state.record(cell, record)

    def _raise_if_genuine(
        self, doc: CampaignDocument, cell: Cell, child: ChildRun, outcome: CellOutcome
    ) -> None:
        """A recorded cell whose failure is the campaign's own stops it."""
        # calls.replay on_miss throw: a replay that cannot be faithful stops the campaign. Told
        # by the error's type: the cell's own (a plan's failed call's), or the judge call's.
        if child.failure is not None and child.failure.is_a(REPLAY_MISS):
            raise GenuineError(REPLAY_MISS, f"cell {cell.run_id}: {child.failure.text}")
        if outcome.score_error_code == REPLAY_MISS:
            raise GenuineError(REPLAY_MISS, f"cell {cell.run_id}: {outcome.score_error}")
        if outcome.integrity_issues and doc.integrity == "throw" and not child.cancelled:
            # A cell that also failed says why: its capture gap may only follow from that.
            failed = f"; the cell itself failed: {child.error}" if child.error else ""
            raise GenuineError(
                INTEGRITY_FAILED,
                f"cell {cell.run_id}: capture integrity failed "
                f"({', '.join(outcome.integrity_issues)}){failed}",
            )

    async def _write(self) -> CampaignArtifactsResult:
        assert self.doc is not None
        state = self.state
        return await write_artifacts(
            CampaignArtifactsInput(
                run_id=state.run_id,
                chain=workflow.info().first_execution_run_id,
                document=self.doc.model_dump(mode="json", by_alias=True),
                fingerprint=state.fingerprint or "",
                status=state.status,
                records=state.ordered_records(),
                planned_cells=len(state.cells),
                budget=state.budget.budget.limits,
                spent=state.budget.budget.spent,
                error=state.error,
                started_at=self.started_at,
                written_at=workflow.now().isoformat(),
                progress=state.progress(),
            )
        )

    # -- control -------------------------------------------------------------------------

    @workflow.query(name=QUERY_PROGRESS)
    def progress(self) -> CampaignProgress:
        return self.state.progress()

    @workflow.query(name=QUERY_EVENTS)
    def events_after(self, cursor: int) -> list[CampaignEvent]:
        return self.state.events_after(cursor)

    @workflow.signal(name=SIGNAL_LEDGER_ROOM)
    def ledger_room_signal(self, raw: RawValue = NO_INPUT) -> None:
        """The campaign's shared ledger has room again: judge calls waiting for it go on."""
        self.ledger_room.room()

    async def _ledger_paused(self, ledger: str, limit: str) -> None:
        """A judge call the shared ledger refused: the campaign shows it waits, naming it."""
        state = self.state
        if state.status == "running":
            state.status, state.blocking = "awaiting_budget", ledger_wait(ledger, limit)
            state.event("campaign.awaiting_budget", ledger=ledger, limit=limit)

    def _ledger_resumed(self, ledger: str) -> None:
        state = self.state
        if state.status == "awaiting_budget" and (state.blocking or "").startswith("ledger "):
            state.status, state.blocking = "running", None
            state.event("campaign.resumed", ledger=ledger)

    def _extension(self, new: ExtendBudgetInput) -> tuple[BudgetLimits | None, list[str]]:
        """New limits, or why not (never raises: see budget.py)."""
        return self.state.budget.budget.checked_extension(new.model_dump())

    def _extend(self, limits: BudgetLimits) -> ExtendBudgetResult:
        self.state.extend(limits)
        budget = self.state.budget.budget
        return ExtendBudgetResult(budget=budget.limits, spent=budget.spent)

    extend_budget, extend_budget_signal = control_verb(
        update=UPDATE_EXTEND_BUDGET,
        signal=SIGNAL_EXTEND_BUDGET,
        input=ExtendBudgetInput,
        check=_extension,
        apply=_extend,
    )

    def refuse_signal(self, signal: str, message: str) -> None:
        """A refused signal, its content or its arguments (``worker/arity``): recorded."""
        self.state.refused.append(message)
        self.state.event("control.refused", control=signal.removesuffix("_signal"), reason=message)
