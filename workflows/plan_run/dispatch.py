"""Dispatch of one plan invocation (an agent step or a model gate), from workflow code.

    re-check containment -> spend one invocation -> record ``dispatched`` -> snapshot writes
    (own activity) -> call the executor -> landed barrier -> output contract -> ``settled``
    -> ensure predicates (``checks``)

retried at once only for the failure classes in ``retry.on``; a contract or ensure failure is
retried with the failure shown to the model, never when the output repeats the previous
attempt's (file predicates excepted). An ``iterate`` step repeats that attempt cycle until its
``until`` holds (``iterate``).

Each call of ``invoke`` is one *occurrence* of its step: the step's own ledger (its ``budget``)
holds the occurrence's worst case first, and every dispatch spends and settles in each nested
ledger that covers it (``workflows.plan.ledgers``), besides the run's. A step in a sub-flow's
body is named by its scoped id (``<run step>/<child>``) in everything it records.
The executor is a provider call, or for a ``dispatch: consumer`` step an issuance an external
client answers (``consumer``): the same reservation, spend, barrier, contract and retries apply.
What is decided without awaiting anything is pure and tested directly: the prompt, the request,
failure classes and retry prompts (``workflows.plan.dispatch_rules``), and what a call costs in
each ledger (``workflows.plan.call_costs``).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from workflows.call_options import CallOptions
    from workflows.ledger.waits import LedgerRoom
    from workflows.model_calls import OnWait, call_model
    from workflows.model_types import CallModelInput, ModelResponse
    from workflows.plan.activity_contracts import CHECK_LANDED, CHECK_PATHS, SNAPSHOT_WRITES
    from workflows.plan.boundaries import occurrence, stage_timeout_ms
    from workflows.plan.call_costs import Books, budget_failure
    from workflows.plan.checkpoints import Reverted, WalkControl
    from workflows.plan.consumer import ConsumerCall, ConsumerFailure, ConsumerHook
    from workflows.plan.dispatch_rules import (
        PROMPT_CEILING_CHARS,
        REPLAY_MISS,
        At,
        CallFailed,
        Invocation,
        Redo,
        call_failure,
        call_input,
        check_ceiling,
        contract_retry,
        ensure_retry,
        left_the_recording,
        occurrence_prompt,
        raised,
        timed_out,
        transport,
    )
    from workflows.plan.flows import scoped
    from workflows.plan.ledger import PlanLedger
    from workflows.plan.ledgers import Exhausted, Ledgers
    from workflows.plan.model import AgentStep, GateStep, Plan
    from workflows.plan.predicates import AttemptScope, result_of
    from workflows.plan.prompts import count_key, invocation_id
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure, PlanRecord
    from workflows.plan.run_types import LandedInput, PathsInput, WriteSnapshot
    from workflows.plan_run.checks import check_ensures
    from workflows.plan_run.iterate import iterate
    from workflows.plan_run.pacing import Pacer

__all__ = [
    "PROMPT_CEILING_CHARS",
    "REPLAY_MISS",
    "CallFailed",
    "Dispatcher",
    "Redo",
    "SettledHook",
    "budget_failure",
    "left_the_recording",
]

SettledHook = Callable[[AgentStep, str, str, str, "int | None", str], Awaitable[None]]
"""Called once an agent step's attempt succeeds: (step, its scoped id, prompt as sent, output,
item index, invocation id). Training-pair capture (``capture``) is one; it never changes the
outcome."""

WORKSPACE_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["ValueError"])


def failure_class(exc: ActivityError | ConsumerFailure) -> CallFailed:
    """How an executor call failed, read off the exception Temporal (or a consumer) raised."""
    if isinstance(exc, ConsumerFailure):  # an external executor's report: no error type
        return CallFailed(exc.klass, exc.message, None)
    cause = exc.cause
    if isinstance(cause, TimeoutError):
        return timed_out(cause.type)
    if isinstance(cause, ApplicationError):
        return raised(cause.type, cause.message)
    return transport(str(cause or exc))


class Dispatcher:
    def __init__(
        self,
        *,
        run_id: str,
        seed: int,
        plan: Plan,
        models: Mapping[str, str],
        ledger: PlanLedger,
        record: PlanRecord,
        workspace: str | None,
        options: CallOptions,
        on_wait: OnWait | None = None,
        consumer: ConsumerHook | None = None,
        control: WalkControl | None = None,
        ledgers: Ledgers | None = None,
        ledger_room: LedgerRoom | None = None,
    ) -> None:
        self.run_id = run_id
        self.ledger_room = ledger_room
        """Calls the run's shared ledger (``calls.ledger``) refused wait here for room."""
        self.seed = seed
        self.plan = plan
        self.models = models
        """Step id -> the provider:model spec it runs on (resolved once, at preflight)."""
        self.ledger = ledger
        self.record = record
        self.workspace = workspace
        self.options = options
        self.on_wait = on_wait
        self.consumer = consumer
        """Hands a ``dispatch: consumer`` attempt to an external executor and waits for it."""
        self.control = control or WalkControl()
        self.ledgers = ledgers or Ledgers()
        """The nested ledgers (steps, fan-outs, sub-flows); the run's is ``ledger``."""
        self.counts: dict[str, int] = {}
        """``step[:item]`` -> dispatches so far (numbers invocation ids and call attempts)."""
        self.sim_index: dict[str, int] = {}
        """Step id -> dispatches of the step in the run (x-sim.outputs picks by it)."""
        self.judge_index: dict[str, int] = {}
        """Step id -> judge calls of its judged ensures in the run (x-sim.judged picks)."""
        self.pacer = Pacer()
        """Bounds the invocations one workflow task starts (a region's branches)."""
        self.on_settled: SettledHook | None = None
        self.settled_at: dict[str, int] = {}
        """``step[:item]`` -> seq of its last successful ``settled`` (a chain member's edge
        to the member before it in the same branch)."""

    def in_workspace(self, workspace: str) -> Dispatcher:
        """This dispatcher with another workspace (an isolated fan-out item's worktree): its
        executors' cwd, the root of its path checks and its landed barrier. Everything else
        (ledgers, counters, the record, the pacer) is shared with this one."""
        clone = copy.copy(self)
        clone.workspace = workspace
        return clone

    async def invoke(
        self,
        step: AgentStep | GateStep,
        *,
        inputs: Mapping[str, Any],
        outputs: Mapping[str, Any],
        item: Any = None,
        item_index: int | None = None,
        scope: str | None = None,
        redo: Redo | None = None,
        causes: tuple[int, ...] = (),
    ) -> str:
        """The step's output text, or ``PlanFailure`` once its attempts are spent. ``scope``:
        the run step whose body the step is in (None: the top level); ``causes``: caused-by
        edges its dispatches carry besides its deps' (a region's, for a chain member)."""
        sid = scoped(scope, step.id)
        own = self.ledgers.own(sid)
        at = At(item, item_index, redo, causes, scope)
        if own is None:
            return await self._occurrence(step, sid, inputs, outputs, at)
        why = own.refusal(occurrence(step))
        if why is not None:
            raise budget_failure(self.record, Exhausted(sid, "step", why), sid)
        own.hold(occurrence(step))
        try:
            return await self._occurrence(step, sid, inputs, outputs, at)
        finally:
            own.release()

    async def _occurrence(
        self,
        step: AgentStep | GateStep,
        sid: str,
        inputs: Mapping[str, Any],
        outputs: Mapping[str, Any],
        at: At,
    ) -> str:
        contract = (
            self.plan.contracts.get(step.out) if isinstance(step, AgentStep) and step.out else None
        )
        await self.pacer.start()
        prompt = occurrence_prompt(
            step, sid, at, inputs=inputs, outputs=outputs, contract=contract,
            steps=self.record.steps, routed_because=self.control.routed_because.get(sid),
        )  # fmt: skip
        self.pacer.charge(len(prompt))
        scope = AttemptScope(
            inputs, outputs, at.item, at.item_index, causes=at.causes, prefix=at.prefix
        )
        if isinstance(step, AgentStep) and step.iterate is not None:
            return await iterate(self, step, sid, prompt, contract, scope)
        return await self.attempts(step, sid, prompt, contract, scope)

    async def attempts(
        self,
        step: AgentStep | GateStep,
        sid: str,
        prompt: str,
        contract: Mapping[str, str] | None,
        scope: AttemptScope,
    ) -> str:
        """One attempt cycle: dispatches until an output passes its contract and ensures, or
        ``PlanFailure`` once the cycle's attempts are spent."""
        attempts = step.attempts()
        previous: str | None = None
        for n in range(1, attempts + 1):
            last = n == attempts
            if n > 1:
                await self.pacer.start()
            check_ceiling(sid, prompt)
            text, failed = await self._dispatch(step, sid, prompt, scope.item_index, scope.causes)
            if failed is not None:
                if failed.klass in step.retry.on and not last:
                    continue
                raise call_failure(sid, failed)
            assert text is not None
            retry = None if contract is None else contract_retry(
                self.record, step, sid, self.plan.contracts,
                text=text, prompt=prompt, previous=previous, last=last,
            )  # fmt: skip
            if retry is None and isinstance(step, AgentStep) and step.ensure:
                unmet = await check_ensures(
                    self, step, sid, output=text, result=result_of(step, text), scope=scope
                )
                if unmet is not None:
                    retry = ensure_retry(
                        step, sid, unmet, text=text, prompt=prompt, previous=previous, last=last
                    )
            if retry is not None:
                previous, prompt = text, retry
                continue
            await self._succeeded(step, sid, prompt, text, scope.item_index)
            return text
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _succeeded(
        self, step: AgentStep | GateStep, sid: str, prompt: str, text: str, item_index: int | None
    ) -> None:
        """An agent step's attempt passed: the settled hook (training-pair capture) sees it."""
        if self.on_settled is None or not isinstance(step, AgentStep):
            return
        # The capture hashes both texts and starts an activity: paced like a start.
        await self.pacer.start()
        self.pacer.charge(len(prompt) + len(text))
        count = self.counts[count_key(sid, item_index)]
        invocation = invocation_id(sid, count, item_index)
        await self.on_settled(step, sid, prompt, text, item_index, invocation)

    async def _dispatch(
        self,
        step: AgentStep | GateStep,
        sid: str,
        prompt: str,
        item_index: int | None,
        causes: tuple[int, ...] = (),
    ) -> tuple[str | None, CallFailed | None]:
        """One invocation: (text, None) or (None, how the call failed)."""
        if self.control.revert_to is not None:  # a revert was accepted: start nothing new
            raise Reverted(self.control.revert_to)
        await self._check_declared(step, sid)
        opened = self._open(step, sid, item_index, causes)
        before = await self._snapshot(step)
        call = call_input(
            step,
            opened,
            run_id=self.run_id,
            prompt=prompt,
            seed=self.seed,
            workspace=self.workspace,
        )
        timeout = timedelta(milliseconds=stage_timeout_ms(step))
        started = workflow.now()
        try:
            response = await self._execute(step, call, timeout, opened.seq)
        except (ActivityError, ConsumerFailure) as exc:
            return None, self._settle_failed(opened, exc, started)
        self.settle_call(opened.id, sid, opened.model, response, started)
        await self._check_landed(opened, before)
        self.settled_at[count_key(sid, item_index)] = self._settled(
            sid, opened.seq, opened.id, ok=True, chars=len(response.text)
        )
        return response.text, None

    async def _check_declared(self, step: AgentStep | GateStep, sid: str) -> None:
        """Containment again at dispatch (the workspace may have changed since validation): a
        declared read or write outside the root fails the step before anything is spent."""
        declared = list(step.artifacts.reads) + list(step.artifacts.writes)
        if not declared or self.workspace is None:
            return
        problems = await self._workspace(
            CHECK_PATHS, PathsInput(workspace=self.workspace, paths=declared)
        )
        if problems:
            raise PlanFailure(
                Reason.ARTIFACT_PATH_ESCAPES_ROOT,
                f"{sid}: at dispatch: " + "; ".join(problems),
                step=sid,
            )

    def _open(
        self,
        step: AgentStep | GateStep,
        sid: str,
        item_index: int | None,
        causes: tuple[int, ...],
    ) -> Invocation:
        """Spend one invocation in every covering ledger, number it, and trace it ``dispatched``
        (caused by the step's deps' settles and ``causes``)."""
        self.spend_call(sid)
        key = count_key(sid, item_index)
        n = self.counts[key] = self.counts.get(key, 0) + 1
        sim_i = self.sim_index[sid] = self.sim_index.get(sid, -1) + 1
        model = self.models[sid]
        invocation = invocation_id(sid, n, item_index)
        prefix = sid[: -len(step.id)]  # "<run step>/" in a body: the deps are its siblings
        seq = self.record.event(
            "dispatched",
            caused_by=sorted({*self.record.causes([prefix + d for d in step.deps]), *causes}),
            step=sid,
            invocation=invocation,
            attempt=n,
            model=model,
        )
        self.record.steps[sid] = "running"
        return Invocation(sid, invocation, n, sim_i, model, seq, item_index)

    async def _snapshot(self, step: AgentStep | GateStep) -> WriteSnapshot | None:
        """A file deliverable's declared writes as they are before the call (the landed
        barrier compares against it); None for any other step."""
        file_deliverable = isinstance(step, AgentStep) and step.deliverable == "file"
        if not file_deliverable or self.workspace is None:
            return None
        return await workflow.execute_activity(
            SNAPSHOT_WRITES,
            PathsInput(workspace=self.workspace, paths=list(step.artifacts.writes)),
            result_type=WriteSnapshot,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=WORKSPACE_RETRY,
        )

    def _settle_failed(
        self, opened: Invocation, exc: ActivityError | ConsumerFailure, started: Any
    ) -> CallFailed:
        """A failed call settles like any other (its wall clock, what a consumer reports it
        spent, its ``settled`` event); whether it is retried is the attempt cycle's call."""
        failed = failure_class(exc)
        sid = opened.sid
        self.settle_call(opened.id, sid, opened.model, None, started, outcome=failed.klass)
        if isinstance(exc, ConsumerFailure) and (exc.tokens or exc.usd):
            self._books().reported(sid, tokens=exc.tokens, usd=exc.usd)
        self._settled(
            sid, opened.seq, opened.id, ok=False, failure=failed.klass, message=failed.message
        )
        return failed

    async def _check_landed(self, opened: Invocation, before: WriteSnapshot | None) -> None:
        """The landed barrier: a file deliverable's writes must have changed on disk. A miss is
        never retried (the model said it wrote them)."""
        if before is None or self.workspace is None:
            return
        problems = await self._workspace(
            CHECK_LANDED, LandedInput(workspace=self.workspace, before=before)
        )
        if problems:
            self._settled(opened.sid, opened.seq, opened.id, ok=False, failure="not-landed")
            raise PlanFailure(
                Reason.DELIVERABLE_NOT_LANDED,
                f"{opened.sid}: " + "; ".join(problems) + " (never retried)",
                step=opened.sid,
            )

    async def _execute(
        self, step: AgentStep | GateStep, call: CallModelInput, timeout: timedelta, seq: int
    ) -> ModelResponse:
        """The executor's answer: a provider call, or (``dispatch: consumer``) an issuance that
        an external client answers with ``step_done`` (``ConsumerFailure`` when it reports a
        failure or misses the timeout)."""
        if isinstance(step, AgentStep) and step.dispatch == "consumer" and self.consumer:
            return await self.consumer(ConsumerCall(step=step, call=call, timeout=timeout, seq=seq))
        self.control.engine_calls += 1  # a revert waits until no engine call is in flight
        try:
            return await call_model(
                call,
                self.options,
                on_wait=self.on_wait,
                ledger_room=self.ledger_room,
                start_to_close_timeout=timeout,
                schedule_to_close_timeout=timeout,
            )
        finally:
            self.control.engine_calls -= 1

    def _books(self) -> Books:
        return Books(self.ledger, self.ledgers, self.record)

    def spend_call(self, sid: str) -> None:
        """Before a model call (a dispatch, or a judged ensure's call): one invocation out of
        every ledger that covers ``sid``."""
        self._books().spend(sid)

    def settle_call(
        self,
        invocation: str,
        sid: str,
        model: str,
        response: ModelResponse | None,
        started: Any,
        *,
        outcome: str = "failed",
    ) -> None:
        """After a model call: its cost into every covering ledger (a failed call costs its
        wall clock) and its row in ``calls``."""
        wall_ms = _ms_since(started)
        if response is None:
            self._books().unanswered(invocation, sid, model, outcome=outcome, wall_ms=wall_ms)
        else:
            self._books().answered(invocation, sid, model, response, wall_ms=wall_ms)

    def _settled(self, step_id: str, seq: int, invocation: str, **data: Any) -> int:
        settled = self.record.event(
            "settled", caused_by=[seq], step=step_id, invocation=invocation, **data
        )
        self.record.last_settled[step_id] = settled
        return settled

    async def _workspace(self, name: str, arg: PathsInput | LandedInput) -> list[str]:
        result: list[str] = await workflow.execute_activity(
            name,
            arg,
            result_type=list[str],
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=WORKSPACE_RETRY,
        )
        return result


def _ms_since(started: Any) -> int:
    return max(0, int((workflow.now() - started).total_seconds() * 1000))
