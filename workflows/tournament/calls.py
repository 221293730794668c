"""Every model call of a tournament: reserve, dispatch, bill, and pause when the budget is spent.

Deterministic workflow-side code (it awaits activities); the arithmetic lives in
``workflows.budget``. A call is reserved before dispatch, so concurrency can never overshoot
``max_calls``; failed calls and invalid-output retries stay billed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows import metrics
    from workflows.budget import Budget, BudgetLimits
    from workflows.call_options import provider_of
    from workflows.costs import cost_usd
    from workflows.ledger.waits import LedgerRoom
    from workflows.model_calls import call_failure, call_model, failed_transport_retries
    from workflows.model_types import CallModelInput, ModelRequest, ModelResponse, Usage
    from workflows.tournament.behaviour import SlotWidths
    from workflows.tournament.errors import (
        BUDGET_EXHAUSTED,
        BUDGET_UNPRICED_MODEL,
        JUDGE_PERSISTENT_INVALID_JSON,
        TournamentError,
    )
    from workflows.tournament.prompts import render
    from workflows.tournament.slots import Slots, provider_widths
    from workflows.tournament.types import Status, TournamentInput, UsageRow

__all__ = ["Dropped", "Judged", "Lane", "TournamentCalls"]

T = TypeVar("T")
Lane = Literal["generate", "judge", "mutate"]
"""A role's concurrency (``TournamentInput.concurrency``)."""
# Prompt role -> the role a provider sees (the sim judge answers "judge").
_REQUEST_ROLE = {
    "generate": "generate",
    "compare": "judge",
    "mutate": "mutate",
    "finalize": "finalize",
}
_LANE_ROLE: dict[Lane, str] = {"generate": "generate", "judge": "compare", "mutate": "mutate"}
"""A lane's prompt role (the judge's is "compare")."""


class Dropped(Exception):
    """A call that never started because the run is stopping (cancel or failure)."""


@dataclass
class Judged(Generic[T]):
    value: T
    response: ModelResponse
    attempts: int
    usage: Usage
    raw_outputs: list[str] = field(default_factory=list)


class TournamentCalls:
    def __init__(self, run_id: str, input: TournamentInput, event: Callable[..., None]) -> None:
        self.run_id = run_id
        self.input = input
        self.event = event
        self.seed = 0
        self.temperatures: dict[str, float] = {}
        """Prompt role -> sampling temperature, from the profile."""
        self.budget = Budget(limits=input.budget)
        self.usage: list[UsageRow] = []
        self._status: Status = "running"
        self._waiting: dict[str, tuple[datetime, str]] = {}
        """Call id -> when it goes on and why (``waiting_provider``): ``provider.retry_later``
        (its provider said to come back) or ``provider.session_gone`` (no MCP session serves)."""
        self.stopping = False
        self.in_flight = 0
        """Calls dispatched and not yet answered."""
        self.inflight: set[asyncio.Task[Any]] = set()
        self.failure: Exception | None = None
        """The first call that failed (whichever phase it was in)."""
        self.slots: Slots | None = None
        """Pipelined rounds' call slots, shared by every phase (``pipeline``)."""
        self.prompts: dict[str, dict[str, str]] = {}
        """Rendered prompts (include_prompts) not yet handed to the artifact writer."""
        self.prompt_refs: dict[str, str] = {}
        self.chain = workflow.info().first_execution_run_id
        """Whose run directory the calls write (activities/run_store.py)."""
        self.on_pause: Callable[[], Awaitable[None]] | None = None
        """Called when the run starts waiting for a budget extension (its files are written)."""
        self.ledger_room = LedgerRoom(
            paused=self._ledger_paused, resumed=self._ledger_resumed, stopping=lambda: self.stopping
        )
        """Calls its shared ledger (``calls.ledger``) refused wait here for room."""
        self.balanced_panel = False
        """An odd panel's extra judge alternates sides from pair to pair (``verdicts``); runs
        started before that rule replay without it."""

    @property
    def status(self) -> Status:
        """``waiting_provider`` while a running tournament's calls wait out a provider's pause."""
        if self._status == "running" and self._waiting:
            return "waiting_provider"
        return self._status

    @status.setter
    def status(self, value: Status) -> None:
        # Counted where the status changes, so every way out of a budget pause (an extension,
        # a ledger's room, the run's end) closes the pause it opened.
        if value == "awaiting_budget" and self._status != "awaiting_budget":
            metrics.pause_started("awaiting_budget")
        elif self._status == "awaiting_budget" and value != "awaiting_budget":
            metrics.pause_ended("awaiting_budget")
        self._status = value

    @property
    def waiting_until(self) -> str | None:
        """When the first waiting call goes on (UTC, ISO 8601), if any waits."""
        return min(self._waiting.values())[0].isoformat() if self._waiting else None

    @property
    def waiting_code(self) -> str | None:
        """Why the first waiting call waits, if any waits."""
        return min(self._waiting.values())[1] if self._waiting else None

    def _on_wait(self, call: CallModelInput) -> Callable[[datetime | None, str], None]:
        def on_wait(until: datetime | None, code: str) -> None:
            if until is None:
                self._waiting.pop(call.call_id, None)
                self.event("provider.resumed", call_id=call.call_id)
            else:
                self._waiting[call.call_id] = (until, code)
                self.event(
                    "provider.waiting", call_id=call.call_id, until=until.isoformat(), code=code
                )

        return on_wait

    # -- running many calls ----------------------------------------------------------------

    def pipeline(self, widths: SlotWidths) -> None:
        """Pipelined rounds: every call takes a slot of its role's concurrency, first come,
        first served (``workflows/tournament/slots.py``), so overlapping phases of different
        roles each run at their own width, within their provider's (``widths="provider"``:
        the widest role that calls it), or within one run-wide width as wide as the widest
        role (``"run"``, runs started before ``pipelined-lane-widths``)."""
        lanes = self.input.concurrency.model_dump()
        if widths == "run":
            self.slots = Slots(lanes, max(lanes.values()))
        elif widths == "lane":
            self.slots = Slots(lanes)
        else:
            self.slots = Slots(lanes, provider_widths=provider_widths(lanes, self._providers()))

    def _providers(self) -> dict[str, list[str]]:
        """Lane -> the providers its calls go to (a judge panel's may be several)."""
        return {
            "generate": [provider_of(self.model_for("generate"))],
            "judge": [provider_of(judge) for judge in self.input.judge_panel],
            "mutate": [provider_of(self.model_for("mutate"))],
        }

    def start_all(
        self,
        calls: Sequence[Callable[[], Awaitable[T]]],
        lane: Lane,
        *,
        ready: Sequence[Callable[[], Awaitable[None]]] | None = None,
        models: Sequence[str] | None = None,
    ) -> list[asyncio.Task[T]]:
        """Start ``calls``, at most ``lane``'s concurrency at a time; ``ready[i]``, if given, is
        awaited before call ``i`` takes a slot (a pair waiting for its candidates holds none).
        ``models[i]`` is the model call ``i`` goes to (default: the lane's), whose provider's
        slot it holds too when pipelined.

        On the first failure nothing new starts: a call that has not taken its slot yet raises
        ``Dropped``.
        """
        slots = self.slots
        semaphore = None if slots else asyncio.Semaphore(getattr(self.input.concurrency, lane))

        async def guarded(
            call: Callable[[], Awaitable[T]],
            ready: Callable[[], Awaitable[None]] | None,
            model: str,
        ) -> T:
            if ready is not None:
                await ready()
            gate = slots.slot(lane, provider_of(model)) if slots is not None else semaphore
            assert gate is not None
            async with gate:
                if self.stopping:
                    raise Dropped()
                try:
                    return await call()
                except Exception as exc:
                    self.stopping = True  # before the gate lets the next call in
                    self.failure = self.failure or exc
                    raise

        waits: Sequence[Callable[[], Awaitable[None]] | None] = ready or [None] * len(calls)
        lane_model = self.model_for(_LANE_ROLE[lane])
        to = models or [lane_model] * len(calls)
        tasks = [
            asyncio.create_task(guarded(call, wait, model))
            for call, wait, model in zip(calls, waits, to, strict=True)
        ]
        self.inflight.update(tasks)
        return tasks

    async def settle(self, tasks: Sequence[asyncio.Task[T]]) -> list[T]:
        """The results of ``tasks`` in the given order, once all have landed; or, after a
        failure, once those in flight have (they are paid for), the failure."""
        try:
            _done, pending = await workflow.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            if pending:  # a call failed (and set ``stopping``): let those in flight land
                await workflow.wait(pending)
            failures = [e for t in tasks if (e := t.exception()) is not None]
            if failures:
                real = [f for f in failures if not isinstance(f, Dropped)]
                # Only dropped here: the failure that stopped them was another phase's.
                raise real[0] if real else (self.failure or failures[0])
            return [t.result() for t in tasks]
        finally:
            self.inflight.difference_update(t for t in tasks if t.done())

    async def run_all(
        self,
        calls: Sequence[Callable[[], Awaitable[T]]],
        lane: Lane,
        *,
        ready: Sequence[Callable[[], Awaitable[None]]] | None = None,
        models: Sequence[str] | None = None,
    ) -> list[T]:
        """Run ``calls`` (see ``start_all``); their results in the given order."""
        return await self.settle(self.start_all(calls, lane, ready=ready, models=models))

    def stop(self) -> None:
        self.stopping = True

    async def drain(self) -> None:
        """Wait for every call still in flight (each is recorded when it lands)."""
        pending = [t for t in self.inflight if not t.done()]
        if pending:
            await workflow.wait(pending)
        for task in self.inflight:  # their failures were raised already, or are moot now
            if not task.cancelled():
                task.exception()
        self.inflight.clear()

    # -- one call ------------------------------------------------------------------------

    def model_for(self, role: str) -> str:
        models = self.input.models
        chosen = {
            "generate": models.generate,
            "compare": models.judge,
            "mutate": models.mutate,
            "finalize": models.finalize,
        }[role]
        return chosen or self.input.model

    async def model(
        self,
        phase: str,
        index: int,
        *,
        role: str,
        values: dict[str, str],
        tag: str | None = None,
        attempt: int = 0,
        model: str | None = None,
    ) -> ModelResponse:
        """Render ``role``'s prompt from ``values`` and make one billed call (on ``model``, a
        panel judge, else the role's model)."""
        override = getattr(self.input.prompts, role) if self.input.prompts else None
        prompt = render(
            role,  # type: ignore[arg-type]
            values,
            style=self.input.prompt_style,
            override=override,
            caps=self.input.output_token_caps,
        )
        request = ModelRequest(
            model=model or self.model_for(role),
            prompt=prompt.user,
            system=prompt.system,
            role=_REQUEST_ROLE[role],
            temperature=self.temperatures.get(role),
            max_output_tokens=prompt.max_output_tokens,
            json_mode=role == "compare",
            seed=self.seed,
            tag=tag,
        )
        call = CallModelInput(  # with its chain and replay: call_model need not copy it
            run_id=self.run_id,
            phase=phase,
            index=index,
            attempt=attempt,
            request=request,
            replay=self.input.calls.replay,
            chain=self.chain,
        )
        if self.input.include_prompts:  # kept content-addressed in the run directory
            self.prompts[prompt.sha256] = prompt.stored()
            self.prompt_refs[call.call_id] = prompt.sha256
        await self._reserve()
        self.in_flight += 1
        try:
            response = await call_model(
                call, self.input.calls, on_wait=self._on_wait(call), ledger_room=self.ledger_room
            )
        except asyncio.CancelledError:  # cancelled while waiting out a provider's pause
            self._bill(call, None, "cancelled")
            raise
        except ActivityError as exc:
            if is_cancelled_exception(exc):  # the run was cancelled while this call ran
                self._bill(call, None, "cancelled")
                raise asyncio.CancelledError() from None
            code, message = call_failure(exc)
            self._bill(call, None, code, failed_retries=failed_transport_retries(exc))
            raise ApplicationError(
                f"{role} call {call.call_key} failed: {message}", type=code, non_retryable=True
            ) from None
        finally:
            self.in_flight -= 1
        self._bill(call, response, None)
        return response

    async def until_valid(
        self,
        phase: str,
        index: int,
        *,
        values: dict[str, str],
        parse: Callable[[str], T],
        errors: tuple[type[Exception], ...],
        model: str | None = None,
    ) -> Judged[T]:
        """A judge call, retried (and billed) while its output does not parse."""
        raw: list[str] = []
        usage = Usage()
        last_error = ""
        for attempt in range(self.input.invalid_json_retries + 1):
            response = await self.model(
                phase, index, role="compare", values=values, attempt=attempt, model=model
            )
            raw.append(response.text)
            usage = usage + response.usage
            try:
                value = parse(response.text)
            except errors as exc:
                last_error = str(exc)
                self.event(
                    "judge.invalid_json",
                    phase=phase,
                    index=index,
                    attempt=attempt,
                    reason=last_error,
                )
                continue
            return Judged(value, response, attempt + 1, usage, raw)
        raise TournamentError(
            JUDGE_PERSISTENT_INVALID_JSON,
            f"judge output for {phase} pair {index} was not a valid verdict after "
            f"{len(raw)} attempts ({last_error}); ponder never invents a tie: use a judge model "
            "that follows the JSON format or raise invalid_json_retries",
        )

    # -- budget --------------------------------------------------------------------------

    async def _reserve(self) -> None:
        while True:
            if self.stopping:
                raise Dropped()
            if self.budget.reserve():
                return
            limit = self.budget.blocking_limit()
            if self.input.on_budget_exhausted == "fail":
                raise TournamentError(
                    BUDGET_EXHAUSTED,
                    f"budget limit {limit} reached ({self.budget.spent.calls} calls, "
                    f"{self.budget.spent.usd:.4f} USD spent): raise it, or start with "
                    'on_budget_exhausted="pause" to extend it mid-run',
                )
            if self.status != "awaiting_budget":
                self.status = "awaiting_budget"
                self.event("budget.paused", limit=limit, spent=self.budget.spent.model_dump())
                if self.on_pause is not None:
                    await self.on_pause()
            await workflow.wait_condition(
                lambda: self.stopping or self.budget.blocking_limit() is None
            )
            if self.status == "awaiting_budget" and not self.stopping:
                self.status = "running"
                self.event("budget.resumed", limits=self.budget.limits.model_dump())

    async def _ledger_paused(self, ledger: str, limit: str) -> None:
        """The run's shared ledger refused a call: the run waits as for its own budget."""
        if self.status != "awaiting_budget":
            self.status = "awaiting_budget"
            self.event("budget.paused", limit=limit, ledger=ledger)
            if self.on_pause is not None:
                await self.on_pause()

    def _ledger_resumed(self, ledger: str) -> None:
        if self.status == "awaiting_budget" and self.budget.blocking_limit() is None:
            self.status = "running"
            self.event("budget.resumed", ledger=ledger)

    def extend(self, limits: BudgetLimits) -> None:
        merged = self.budget.limits.model_copy(update=limits.model_dump(exclude_none=True))
        self.budget.limits = merged
        self.event("budget.extended", limits=merged.model_dump())

    def _bill(
        self,
        call: CallModelInput,
        response: ModelResponse | None,
        error: str | None,
        *,
        failed_retries: int = 0,
    ) -> None:
        spec = call.request.model
        usage = response.usage if response else Usage()
        usd = 0.0
        unpriced = False
        price = self.input.prices.get(spec)
        if response is not None:
            if price is not None:
                usd = cost_usd(price, usage)
            elif response.usd is not None:
                usd = response.usd
            else:
                unpriced = self.budget.limits.max_usd is not None
        # A failed call costs nothing known; a made one is priced by the table or the provider.
        priced = response is None or price is not None or response.usd is not None
        self._record(call, response, usage, usd, error, failed_retries, priced=priced)
        if unpriced:  # recorded first: the call was made and its tokens are known
            raise TournamentError(
                BUDGET_UNPRICED_MODEL,
                f"model {spec} has no price but max_usd is set: add its price to the "
                "input's prices (or ponder.toml) or drop max_usd",
            )

    def _record(
        self,
        call: CallModelInput,
        response: ModelResponse | None,
        usage: Usage,
        usd: float,
        error: str | None,
        failed_retries: int = 0,
        *,
        priced: bool = True,
    ) -> None:
        spec = call.request.model
        retries = response.transport_retries if response else failed_retries
        self.budget.settle(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            usd=usd,
            transport_retries=retries,
            failed=response is None,
        )
        provider, _, model = spec.partition(":")
        self.usage.append(
            UsageRow(
                usage_id=call.call_id,
                ts=workflow.now().isoformat(),
                phase=call.phase,
                role=call.request.role,
                provider=response.provider if response else provider,
                model=response.model if response else model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_hit_tokens=usage.cache_hit_tokens,
                cache_miss_tokens=usage.cache_miss_tokens,
                total_tokens=usage.total_tokens,
                usd=usd,
                latency_ms=response.latency_ms if response else 0.0,
                transport_retries=retries,
                outcome="success" if response else "failed",
                error_code=error,
                prompt_sha256=self.prompt_refs.pop(call.call_id, None),
                priced=priced,
            )
        )
