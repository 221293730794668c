"""``Campaign``: variants x scenarios x seeds, each cell a child workflow, then the report.

    preflight (route, ids, comparator, commit sha, configs) -> fingerprint -> cells in
    variant-major order, at most ``concurrency`` at once, each reserving its worst case on the
    shared budget -> settle (capture check, spend, score) -> records -> report

A cell failure (``runner_threw``, ``integrity_failed``, ``scorer_failed``) is recorded and the
campaign goes on. A genuine error (an invalid record, an integrity failure under ``throw``, a
failed campaign activity) stops new cells, cancels and drains the running ones (their spend is
settled and recorded), writes the artifacts and fails the campaign with the error's code. An
owner cancel does the same and ends CANCELED with the partial report written.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    from activities.campaign.cells import CHECK_CAMPAIGN_ROUTE, SETTLE_CAMPAIGN_CELL
    from activities.campaign.report import WRITE_CAMPAIGN_ARTIFACTS
    from activities.errors import ReplayMissError
    from workflows.ask_types import AskResult
    from workflows.campaign.cell_records import (
        RecordInvalid,
        build_record,
        judge_prompt,
        judge_score,
        leader,
    )
    from workflows.campaign.cells_budget import CellBudget
    from workflows.campaign.configs import (
        ask_input,
        cell_calls,
        config_errors,
        final_step,
        plan_input,
        tournament_input,
        variant_models,
    )
    from workflows.campaign.document import CampaignDocument, JudgeScorer, semantic_errors
    from workflows.campaign.matrix import MAX_CAMPAIGN_RUN_ID, Cell, cells, fingerprint
    from workflows.campaign.records import RunRecord
    from workflows.campaign.types import (
        CampaignArtifactsInput,
        CampaignArtifactsResult,
        CampaignEvent,
        CampaignProgress,
        CampaignResult,
        CampaignStatus,
        CellOutcome,
        CheckRouteInput,
        RouteCheck,
        RoutedModel,
        SettleCellInput,
    )
    from workflows.inputs import InputInvalid
    from workflows.model_calls import call_model
    from workflows.model_types import CallModelInput, ModelRequest
    from workflows.names import (
        ASK,
        CAMPAIGN,
        PLAN_RUN,
        QUERY_EVENTS,
        QUERY_PROGRESS,
        SIGNAL_EXTEND_BUDGET,
        TOURNAMENT,
        UPDATE_EXTEND_BUDGET,
    )
    from workflows.plan.run_types import PlanRunResult
    from workflows.raw_input import NO_INPUT, decode_raw, input_failure
    from workflows.run_ids import RUN_ID_INVALID, run_id_problem
    from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult, TournamentResult

__all__ = ["CampaignWorkflow"]

EVENTS_PAGE = 500
INTEGRITY_FAILED = "integrity.failed"
REPLAY_MISS = ReplayMissError("").error_type
ACTIVITY_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["ValueError"])


class GenuineError(Exception):
    """Stops the campaign: not a cell's failure but the campaign's own."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@workflow.defn(name=CAMPAIGN)
class CampaignWorkflow:
    @workflow.init
    def __init__(self, raw: RawValue = NO_INPUT) -> None:
        # Decoded here (never raising), refused in run; queries answer either way.
        decoded = decode_raw(CampaignDocument, raw)
        self.input_error = decoded if isinstance(decoded, InputInvalid) else None
        self.doc = decoded if isinstance(decoded, CampaignDocument) else None
        self.run_id = workflow.info().workflow_id
        self.status: CampaignStatus = "running"
        self.budget = CellBudget.of(self.doc.budget) if self.doc else CellBudget()
        self.cells: list[Cell] = []
        self.records: dict[int, RunRecord] = {}
        self.running: set[int] = set()
        self.child_tasks: dict[int, asyncio.Task[Any]] = {}
        self.events: list[CampaignEvent] = []
        self.refused: list[str] = []
        self.fingerprint: str | None = None
        self.error: str | None = None
        self.blocking: str | None = None
        self.genuine: GenuineError | None = None
        self.cancelling = False
        self.http_variants: set[str] = set()
        self.answers: dict[int, str] = {}
        """Plan cells' answers (the last step's output) until their cell is settled."""
        self.version = 0  # bumped whenever a reservation might now succeed
        self.started_at = ""

    # -- the run -------------------------------------------------------------------------

    @workflow.run
    async def run(self, raw: RawValue = NO_INPUT) -> CampaignResult:
        self.started_at = workflow.now().isoformat()
        if self.input_error is not None or self.doc is None:
            assert self.input_error is not None
            self.status, self.error = "failed", self.input_error.message
            raise input_failure(self.input_error)
        doc = self.doc
        await self._preflight(doc)
        self.fingerprint = fingerprint(doc)
        self.cells = cells(doc, self.run_id)
        self._event("campaign.started", cells=len(self.cells), fingerprint=self.fingerprint)
        try:
            await self._run_cells(doc)
        except asyncio.CancelledError:
            self.status = "cancelled"
            self._event("campaign.cancelled")
            await self._write()
            raise asyncio.CancelledError() from None
        if self.genuine is not None:
            self.status, self.error = "failed", f"{self.genuine.code}: {self.genuine.message}"
            self._event("campaign.failed", error=self.error)
            await self._write()
            raise ApplicationError(self.genuine.message, type=self.genuine.code, non_retryable=True)
        self.status = "completed"
        written = await self._write()
        self._event("campaign.completed", recommendation=written.recommendation)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return CampaignResult(
            run_id=self.run_id,
            status="completed",
            fingerprint=self.fingerprint,
            cells=len(self.records),
            failed_cells=sum(1 for r in self.records.values() if r.failure_class is not None),
            decisions=written.decisions,
            recommendation=written.recommendation,
            recommended_variant=written.recommended_variant,
            spent=self.budget.budget.spent,
            run_dir=written.run_dir,
        )

    async def _preflight(self, doc: CampaignDocument) -> None:
        """In the spec's order: the route first, then ids, comparator, commit sha, configs."""
        if len(self.run_id) > MAX_CAMPAIGN_RUN_ID or run_id_problem(self.run_id) is not None:
            self._fail_now(
                RUN_ID_INVALID,
                f"campaign run id {self.run_id!r} must be a valid run id of at most "
                f"{MAX_CAMPAIGN_RUN_ID} characters (its cells add a suffix): choose another",
            )
        errors = semantic_errors(doc)
        errors += [] if errors else config_errors(doc)
        if not errors:
            check: RouteCheck = await workflow.execute_activity(
                CHECK_CAMPAIGN_ROUTE,
                CheckRouteInput(
                    route=doc.route,
                    models=[
                        RoutedModel(variant=v, model=m, base_url=u)
                        for v, m, u in variant_models(doc)
                    ],
                ),
                result_type=RouteCheck,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=ACTIVITY_RETRY,
            )
            if check.issues:
                first = check.issues[0]
                self._fail_now(
                    f"route.{first.reason}",
                    "; ".join(
                        f"{i.variant} ({i.model}): {i.reason}: {i.message}" for i in check.issues
                    ),
                )
            self.http_variants = set(check.http_variants)
        if errors:
            self._fail_now(errors[0].code, "; ".join(e.line() for e in errors))

    def _fail_now(self, code: str, message: str) -> None:
        self.status, self.error = "failed", f"{code}: {message}"
        raise ApplicationError(message, type=code, non_retryable=True)

    async def _run_cells(self, doc: CampaignDocument) -> None:
        pending = iter(self.cells)

        async def lane() -> None:
            while self.genuine is None and not self.cancelling:
                cell = next(pending, None)
                if cell is None:
                    return
                try:
                    await self._run_cell(doc, cell)
                except GenuineError as exc:
                    self._stop(exc)

        lanes = [asyncio.create_task(lane()) for _ in range(min(doc.concurrency, len(self.cells)))]
        try:
            # Not gather: an owner cancel must reach this await only, so the lanes keep going
            # long enough to record the cells they cancel (their spend) before the run ends.
            await workflow.wait(lanes)
        except asyncio.CancelledError:
            self.cancelling = True
            self._event("campaign.cancelling")
            self._cancel_children()
            await workflow.wait(lanes)
            raise
        for finished in lanes:
            finished.result()  # an unforeseen error in a lane is a bug: let it fail the task

    def _cancel_children(self) -> None:
        for task in self.child_tasks.values():
            task.cancel()
        self.version += 1

    def _stop(self, error: GenuineError) -> None:
        """A genuine error: no new cells; cancel the running ones (they drain and record)."""
        if self.genuine is None:
            self.genuine = error
            self._event("campaign.stopping", error=f"{error.code}: {error.message}")
            self._cancel_children()

    async def _reserve(self, calls: int) -> bool:
        """Wait until the shared budget takes this cell's worst case; False once stopping."""
        while not self.budget.reserve(calls):
            limit = self.budget.blocking_limit(calls)
            if not self.running:
                self.status, self.blocking = "awaiting_budget", limit
                self._event("campaign.awaiting_budget", limit=limit, cell_calls=calls)
            seen = self.version
            await workflow.wait_condition(lambda seen=seen: self.version != seen)  # type: ignore[misc]
            if self.genuine is not None or self.cancelling:
                return False
        if self.status == "awaiting_budget":
            self.status, self.blocking = "running", None
            self._event("campaign.resumed")
        return True

    async def _run_cell(self, doc: CampaignDocument, cell: Cell) -> None:
        variant, scenario = doc.variant(cell.variant), doc.scenario(cell.scenario)
        reserved = cell_calls(variant, scenario)
        if not await self._reserve(reserved):
            return
        self.running.add(cell.index)
        started = workflow.now()
        child_error: str | None = None
        cancelled = False
        task = asyncio.create_task(self._child(doc, cell, reserved))
        self.child_tasks[cell.index] = task
        try:
            await task
        except (asyncio.CancelledError, ChildWorkflowError) as exc:
            # A child we cancelled may still end FAILED (it reports its own interrupted call).
            if is_cancelled_exception(exc) or self.cancelling or self.genuine is not None:
                cancelled = True
            else:
                cause = exc.cause if isinstance(exc, ChildWorkflowError) else None
                code = cause.type if isinstance(cause, ApplicationError) and cause.type else "error"
                message = (
                    cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
                )
                child_error = f"{code}: {message}"
        finally:
            self.child_tasks.pop(cell.index, None)
        judge = isinstance(scenario.scorer, JudgeScorer) and not cancelled and child_error is None
        outcome: CellOutcome = await workflow.execute_activity(
            SETTLE_CAMPAIGN_CELL,
            SettleCellInput(
                run_id=cell.run_id,
                kind=variant.kind,
                scorer=scenario.scorer,
                child_failed=cancelled or child_error is not None,
                http=variant.id in self.http_variants,
                return_answer=judge,
                answer=self.answers.pop(cell.index, None),
            ),
            result_type=CellOutcome,
            start_to_close_timeout=timedelta(minutes=15),
            retry_policy=ACTIVITY_RETRY,
        )
        if judge and outcome.answer is not None:
            outcome = await self._judge(doc, cell, scenario, outcome)
        wall_ms = (workflow.now() - started).total_seconds() * 1000
        calls = outcome.calls if outcome.exists else (reserved if cancelled else 0)
        self.budget.settle(
            reserved,
            calls=calls,
            input_tokens=outcome.input_tokens,
            output_tokens=outcome.output_tokens,
            usd=outcome.usd,
            failed=child_error is not None,
        )
        self.running.discard(cell.index)
        self.version += 1
        try:
            record = build_record(
                doc,
                cell,
                outcome,
                calls=calls,
                wall_ms=wall_ms,
                child_error=child_error,
                cancelled=cancelled,
            )
        except RecordInvalid as exc:
            raise GenuineError(exc.code, str(exc)) from None
        self.records[cell.index] = record
        self._event(
            "cell.finished",
            cell=cell.index,
            run_id=cell.run_id,
            score=record.score,
            failure_class=record.failure_class,
        )
        if child_error is not None and child_error.startswith(f"{REPLAY_MISS}:"):
            # calls.replay on_miss throw: a replay that cannot be faithful stops the campaign.
            raise GenuineError(REPLAY_MISS, f"cell {cell.run_id}: {child_error}")
        if outcome.integrity_issues and doc.integrity == "throw" and not cancelled:
            raise GenuineError(
                INTEGRITY_FAILED,
                f"cell {cell.run_id}: capture integrity failed "
                f"({', '.join(outcome.integrity_issues)})",
            )

    async def _child(self, doc: CampaignDocument, cell: Cell, reserved: int) -> None:
        variant, scenario = doc.variant(cell.variant), doc.scenario(cell.scenario)
        if variant.kind == "plan":
            result = await workflow.execute_child_workflow(
                PLAN_RUN,
                plan_input(
                    variant,
                    task=scenario.task,
                    seed=cell.child_seed,
                    run_id=cell.run_id,
                    calls=doc.calls,
                ),
                id=cell.run_id,
                result_type=PlanRunResult,
            )
            output = result.outputs.get(final_step(variant))
            self.answers[cell.index] = output if isinstance(output, str) else json.dumps(output)
        elif variant.kind == "single":
            payload = ask_input(
                variant,
                task=scenario.task,
                seed=cell.child_seed,
                run_id=cell.run_id,
                calls=doc.calls,
            )
            await workflow.execute_child_workflow(
                ASK, payload, id=cell.run_id, result_type=AskResult
            )
        else:
            judge = int(isinstance(scenario.scorer, JudgeScorer))
            payload_t = tournament_input(
                variant,
                task=scenario.task,
                seed=cell.child_seed,
                run_id=cell.run_id,
                max_calls=reserved - judge,
                calls=doc.calls,
            )
            await workflow.execute_child_workflow(
                TOURNAMENT, payload_t, id=cell.run_id, result_type=TournamentResult
            )

    async def _judge(
        self, doc: CampaignDocument, cell: Cell, scenario: Any, outcome: CellOutcome
    ) -> CellOutcome:
        scorer: JudgeScorer = scenario.scorer
        prompt = judge_prompt(scenario.task, scorer.rubric, outcome.answer or "")
        update: dict[str, Any] = {"answer": None}
        try:
            response = await call_model(
                CallModelInput(
                    run_id=cell.run_id,
                    phase="campaign_judge",
                    index=0,
                    request=ModelRequest(
                        model=scorer.model, prompt=prompt, role="judge", seed=cell.child_seed
                    ),
                ),
                doc.calls,
            )
        except ActivityError as exc:
            cause = exc.cause
            update["score_error"] = f"judge call failed: {getattr(cause, 'message', cause)}"
            update["calls"] = outcome.calls + 1
            return outcome.model_copy(update=update)
        value = judge_score(response.text)
        if value is None:
            update["score_error"] = "the judge's last line is not a number"
        else:
            update["score"] = value
        update |= {
            "calls": outcome.calls + 1,
            "input_tokens": outcome.input_tokens + response.usage.input_tokens,
            "output_tokens": outcome.output_tokens + response.usage.output_tokens,
            "usd": outcome.usd + (response.usd or 0.0),
        }
        return outcome.model_copy(update=update)

    async def _write(self) -> CampaignArtifactsResult:
        assert self.doc is not None
        return await workflow.execute_activity(
            WRITE_CAMPAIGN_ARTIFACTS,
            CampaignArtifactsInput(
                run_id=self.run_id,
                document=self.doc.model_dump(mode="json", by_alias=True),
                fingerprint=self.fingerprint or "",
                status=self.status,
                records=[self.records[i] for i in sorted(self.records)],
                planned_cells=len(self.cells),
                budget=self.budget.budget.limits,
                spent=self.budget.budget.spent,
                error=self.error,
                started_at=self.started_at,
                written_at=workflow.now().isoformat(),
            ),
            result_type=CampaignArtifactsResult,
            start_to_close_timeout=timedelta(minutes=5),
            retry_policy=ACTIVITY_RETRY,
        )

    def _event(self, type: str, **data: Any) -> None:
        self.events.append(
            CampaignEvent(
                seq=len(self.events) + 1, ts=workflow.now().isoformat(), type=type, data=data
            )
        )

    # -- control -------------------------------------------------------------------------

    @workflow.query(name=QUERY_PROGRESS)
    def progress(self) -> CampaignProgress:
        best, best_mean = leader(list(self.records.values()))
        return CampaignProgress(
            run_id=self.run_id,
            status=self.status,
            cells_total=len(self.cells),
            cells_done=len(self.records),
            cells_running=len(self.running),
            cells_failed=sum(1 for r in self.records.values() if r.failure_class is not None),
            budget=self.budget.budget.limits,
            spent=self.budget.budget.spent,
            reserved_calls=self.budget.reserved_calls,
            blocking_limit=self.blocking,
            leader=best,
            leader_mean=best_mean,
            fingerprint=self.fingerprint,
            error=self.error,
            refused=self.refused[-5:],
        )

    @workflow.query(name=QUERY_EVENTS)
    def events_after(self, cursor: int) -> list[CampaignEvent]:
        return [e for e in self.events if e.seq > cursor][:EVENTS_PAGE]

    @workflow.update(name=UPDATE_EXTEND_BUDGET)
    def extend_budget(self, new: ExtendBudgetInput) -> ExtendBudgetResult:
        limits, _ = self.budget.budget.checked_extension(new.model_dump())
        assert limits is not None  # the validator refused anything else
        self._extend(limits)
        return ExtendBudgetResult(budget=self.budget.budget.limits, spent=self.budget.budget.spent)

    @extend_budget.validator
    def _check_extension(self, new: ExtendBudgetInput) -> None:
        _, problems = self.budget.budget.checked_extension(new.model_dump())
        if problems:
            raise ValueError("; ".join(problems))

    @workflow.signal(name=SIGNAL_EXTEND_BUDGET)
    def extend_budget_signal(self, new: ExtendBudgetInput) -> None:
        limits, problems = self.budget.budget.checked_extension(new.model_dump())
        if limits is None:
            self.refused.append("; ".join(problems))
            self._event("control.refused", control="extend_budget", reason="; ".join(problems))
            return
        self._extend(limits)

    def _extend(self, limits: Any) -> None:
        self.budget.extend(limits)
        self.version += 1
        self._event("budget.extended", budget=self.budget.budget.limits.model_dump())
