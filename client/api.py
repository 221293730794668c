"""A small typed client for ponder runs, for scripts and other programs.

    async with Ponder.connect() as ponder:
        run = await ponder.tournament(TournamentInput(task="...", model="sim:default"))
        async for event in run.events():
            ...
        result = await run.result()

``connect()`` uses ``TEMPORAL_ADDRESS`` when set (a cluster with its own workers), else the
embedded server of ``$PONDER_HOME``, holding a lease and running a worker in this process while
the block is open; runs still open when the block ends go on in a background worker. Run kinds
are found by workflow type, so a later kind (``PlanRun``, ``Campaign``) is one entry in ``KINDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle

from activities.config import Settings, load_settings
from client.documents import load, validate_campaign
from client.ledgers import attach_ledger
from client.runs import (
    RunFailed,
    new_run_id,
    run_result,
    start_run,
    through_restarts,
)
from client.session import Session, open_session, spawn_background_worker
from workflows.ask_types import AskInput, AskResult
from workflows.campaign.errors import CampaignInvalid
from workflows.campaign.types import CampaignEvent, CampaignProgress, CampaignResult
from workflows.names import (
    ASK,
    CAMPAIGN,
    PLAN_RUN,
    QUERY_EVENTS,
    QUERY_PROGRESS,
    TOURNAMENT,
    UPDATE_EXTEND_BUDGET,
)
from workflows.plan.run_types import PlanRunResult
from workflows.run_ids import check_run_id
from workflows.tournament.types import (
    Event,
    ExtendBudgetInput,
    ExtendBudgetResult,
    Progress,
    TournamentInput,
    TournamentResult,
)

__all__ = ["AskRun", "CampaignRun", "PlanRun", "Ponder", "Run", "RunFailed", "TournamentRun"]

ResultT = TypeVar("ResultT", bound=BaseModel)
EventT = TypeVar("EventT", Event, CampaignEvent)
EVENT_POLL_S = 0.5


@dataclass
class Run(Generic[ResultT]):
    """One run (a workflow execution) of some kind: wait, cancel, describe."""

    workflow_type: ClassVar[str] = ""
    result_type: ClassVar[type[BaseModel]] = BaseModel
    id_prefix: ClassVar[str] = "run"

    id: str
    handle: WorkflowHandle[Any, Any]

    async def result(self) -> ResultT:
        """Wait for the run to end (through server restarts): its result, or ``RunFailed``."""
        try:
            return await run_result(self.handle)  # type: ignore[no-any-return]
        except WorkflowFailureError as exc:
            raise RunFailed.of(self.id, exc) from exc

    async def status(self) -> WorkflowExecutionStatus | None:
        return (await through_restarts(self.handle.describe)).status

    async def cancel(self, *, wait: bool = True) -> None:
        """Cancel: calls in flight finish and are recorded, artifacts are written."""
        await through_restarts(self.handle.cancel)
        if wait:
            with contextlib.suppress(RunFailed):
                await self.result()


class AskRun(Run[AskResult]):
    workflow_type = ASK
    result_type = AskResult
    id_prefix = "ask"


class _Budgeted(Run[ResultT]):
    """A run with ``BudgetLimits`` that its ``extend_budget`` update raises."""

    async def progress(self) -> Progress | CampaignProgress:
        raise NotImplementedError

    async def _follow(self, page_type: type[list[EventT]], cursor: int) -> AsyncIterator[EventT]:
        """The run's events after ``cursor`` as they happen, until it ends or pauses."""
        stopped = False
        while True:
            page = await through_restarts(
                functools.partial(self.handle.query, QUERY_EVENTS, cursor, result_type=page_type)
            )
            for event in page:
                cursor = max(cursor, event.seq)
                yield event
            if page:
                stopped = False
                continue
            if stopped:
                return
            # One more page once it has stopped: the event of its pause or end can land between
            # the empty page and the status (seen: a campaign's last event was cell.finished).
            stopped = (await self.progress()).status != "running"
            if not stopped:
                await asyncio.sleep(EVENT_POLL_S)

    async def extend(
        self,
        *,
        max_calls: int | None = None,
        max_usd: float | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
    ) -> ExtendBudgetResult:
        """New absolute limits (None keeps one); a run paused on its budget goes on."""
        limits = ExtendBudgetInput(
            max_calls=max_calls,
            max_usd=max_usd,
            max_input_tokens=max_input_tokens,
            max_output_tokens=max_output_tokens,
        )
        return await self.handle.execute_update(
            UPDATE_EXTEND_BUDGET, limits, result_type=ExtendBudgetResult
        )


class TournamentRun(_Budgeted[TournamentResult]):
    workflow_type = TOURNAMENT
    result_type = TournamentResult
    id_prefix = "think"

    async def progress(self) -> Progress:
        """Status, phase, budget and spend, the leaderboard's top 5."""
        return await through_restarts(
            lambda: self.handle.query(QUERY_PROGRESS, result_type=Progress)
        )

    def events(self, cursor: int = 0) -> AsyncIterator[Event]:
        """Every event after ``cursor``, as they happen, until the run ends or pauses."""
        return self._follow(list[Event], cursor)


RunT = TypeVar("RunT", bound=Run[Any])


class PlanRun(Run[PlanRunResult]):
    """A plan run (started with ``ponder plan run``); attach, wait and cancel here."""

    workflow_type = PLAN_RUN
    result_type = PlanRunResult
    id_prefix = "plan"


class CampaignRun(_Budgeted[CampaignResult]):
    """A campaign: its progress (cells, spend, leader), shared budget, events and decision."""

    workflow_type = CAMPAIGN
    result_type = CampaignResult
    id_prefix = "campaign"

    async def progress(self) -> CampaignProgress:
        return await through_restarts(
            lambda: self.handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
        )

    def events(self, cursor: int = 0) -> AsyncIterator[CampaignEvent]:
        """Every event after ``cursor``, as they happen, until the campaign ends or pauses."""
        return self._follow(list[CampaignEvent], cursor)


KINDS: dict[str, type[Run[Any]]] = {
    kind.workflow_type: kind for kind in (AskRun, TournamentRun, PlanRun, CampaignRun)
}


class Ponder:
    """Start or attach to runs. Create with ``async with Ponder.connect(...) as ponder``."""

    def __init__(self, session: Session, *, ledger: str | None = None) -> None:
        self._session = session
        self._ledger = ledger
        """The shared ledger every run started here draws on (``connect(ledger=...)``)."""

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls,
        *,
        address: str | None = None,
        home: str | Path | None = None,
        task_queue: str | None = None,
        config: str | Path | None = None,
        ledger: str | None = None,
    ) -> AsyncIterator[Ponder]:
        """Connect as ``ponder`` itself does (see the module docstring); ``ledger``: every run
        started here draws on that shared ledger (its draw token read from its file)."""
        flags = {"home": str(home) if home else None, "task_queue": task_queue}
        settings: Settings = load_settings(config, **flags)
        if address:
            settings = settings.model_copy(update={"temporal_address": address})
        async with open_session(settings) as session:
            ponder = cls(session, ledger=ledger)
            try:
                yield ponder
            finally:
                await ponder._hand_over()

    @property
    def settings(self) -> Settings:
        return self._session.settings

    async def ask(self, question: AskInput | str, **fields: Any) -> AskRun:
        """Start an Ask (an ``AskInput``, or the question and ``AskInput`` fields)."""
        payload = (
            question if isinstance(question, AskInput) else AskInput(question=question, **fields)
        )
        return await self._start(AskRun, payload)

    async def tournament(self, task: TournamentInput | str, **fields: Any) -> TournamentRun:
        """Start a Tournament (a ``TournamentInput``, or the task and its fields)."""
        payload = (
            task if isinstance(task, TournamentInput) else TournamentInput(task=task, **fields)
        )
        return await self._start(TournamentRun, payload)

    async def campaign(
        self, document: str | Path | dict[str, Any], *, run_id: str | None = None
    ) -> CampaignRun:
        """Start a campaign from a ``ponder-campaign/1`` file (plan paths inlined, saved
        profiles expanded) or its document as a dict, validated as ``ponder campaign validate``
        does: an invalid one raises ``CampaignInvalid`` listing every error."""
        checked = (
            validate_campaign(document, self.settings)
            if isinstance(document, dict)
            else load(str(document), self.settings)
        )
        if not checked.ok or checked.document is None:
            raise CampaignInvalid(checked.errors)
        run_id = check_run_id(run_id or new_run_id(CampaignRun.id_prefix))
        payload = checked.document.model_dump(mode="json", by_alias=True)
        payload = attach_ledger(payload, self.settings, self._ledger)
        handle = await start_run(self._session, CAMPAIGN, payload, run_id, CampaignResult)
        return CampaignRun(run_id, handle)

    async def attach(self, run_id: str) -> Run[Any]:
        """The run ``run_id``, typed by its workflow type (``AskRun``, ``TournamentRun``, ...)."""
        handle = self._session.client.get_workflow_handle(check_run_id(run_id))
        workflow_type = (await through_restarts(handle.describe)).workflow_type
        kind = KINDS.get(workflow_type, Run)
        typed = self._session.client.get_workflow_handle(run_id, result_type=kind.result_type)
        return kind(run_id, typed)

    async def _start(self, kind: type[RunT], payload: AskInput | TournamentInput) -> RunT:
        run_id = check_run_id(payload.run_id or new_run_id(kind.id_prefix))
        payload = attach_ledger(
            payload.model_copy(update={"run_id": run_id}), self.settings, self._ledger
        )
        handle = await start_run(
            self._session, kind.workflow_type, payload, run_id, kind.result_type
        )
        return kind(run_id, handle)

    async def _hand_over(self) -> None:
        """Runs still open go on in a background worker when this process's worker leaves."""
        session = self._session
        if not session.embedded:
            return
        query = f'TaskQueue="{session.settings.task_queue}" AND ExecutionStatus="Running"'
        with contextlib.suppress(Exception):
            if (await session.client.count_workflows(query)).count:
                spawn_background_worker(session.settings)
