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
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from workflows.call_options import CallOptions
    from workflows.ledger.waits import LedgerRoom
    from workflows.model_calls import OnWait, call_model
    from workflows.model_types import CallModelInput, ModelRequest, ModelResponse
    from workflows.plan.activity_contracts import CHECK_LANDED, CHECK_PATHS, SNAPSHOT_WRITES
    from workflows.plan.boundaries import occurrence, stage_timeout_ms
    from workflows.plan.checkpoints import Reverted, WalkControl
    from workflows.plan.consumer import ConsumerCall, ConsumerFailure, ConsumerHook
    from workflows.plan.contracts import check_output
    from workflows.plan.flows import scoped
    from workflows.plan.gates import defang
    from workflows.plan.ledger import BudgetInvariantViolated, PlanLedger
    from workflows.plan.ledgers import Exhausted, Ledgers
    from workflows.plan.model import AgentStep, GateStep, Plan
    from workflows.plan.predicates import AttemptScope, result_of
    from workflows.plan.prompts import assemble_prompt, count_key, invocation_id, retry_feedback
    from workflows.plan.reasons import Reason
    from workflows.plan.refs import Ref, RefError, RenderTooLong, parse_template, render
    from workflows.plan.run_record import CallRow, PlanFailure, PlanRecord
    from workflows.plan.run_types import LandedInput, PathsInput, WriteSnapshot
    from workflows.plan_run.checks import check_ensures
    from workflows.plan_run.iterate import iterate
    from workflows.plan_run.pacing import Pacer
    from workflows.provider_errors import ReplayMissError

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

PROMPT_CEILING_CHARS = 1_000_000
"""A dispatch prompt past this (upstream values spliced in) fails ``prompt-over-ceiling``."""
WORKSPACE_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["ValueError"])
_CLASS_OF = {
    "provider.timeout": "timeout",
    "provider.malformed_output": "malformed-output",
    "provider.policy_refusal": "policy-refusal",
    str(Reason.ARTIFACT_PATH_ESCAPES_ROOT): "escapes-root",  # the worker refused the workspace
}
_REASON_OF = {
    "escapes-root": Reason.ARTIFACT_PATH_ESCAPES_ROOT,
    "timeout": Reason.DISPATCH_TIMEOUT,
    "malformed-output": Reason.MALFORMED_OUTPUT,
    "policy-refusal": Reason.POLICY_REFUSAL,
    "transport": Reason.DISPATCH_DEAD,
}


@dataclass(frozen=True)
class Redo:
    """A model gate re-runs its fail route: the route step's upstream is its own previous
    output (docs/plans.md; the reference interpreter does the same)."""

    gate: str
    """The gate's scoped id."""
    previous: Any


REPLAY_MISS = ReplayMissError("").error_type


def left_the_recording(failure: PlanFailure) -> bool:
    """A call that a wire replay (``calls.replay``, ``on_miss: throw``) found no recording for.
    No ``on_fail`` route, join or sub-flow may absorb it: the run has left its recording, and
    going on would make a run the recording never was, so it fails the run (its ``cause`` tells
    a campaign cell it was a miss, as a single shot's or a tournament's own code does)."""
    return failure.cause == REPLAY_MISS


@dataclass(frozen=True)
class CallFailed:
    """A failed executor call: its plan failure class, what to show, the error's own type."""

    klass: str
    message: str
    code: str | None


def failure_class(exc: ActivityError | ConsumerFailure) -> CallFailed:
    if isinstance(exc, ConsumerFailure):  # an external executor's report: no error type
        return CallFailed(exc.klass, exc.message, None)
    cause = exc.cause
    if isinstance(cause, TimeoutError):
        return CallFailed("timeout", f"no answer before the stage timeout ({cause.type})", None)
    if isinstance(cause, ApplicationError):
        klass = _CLASS_OF.get(cause.type or "", "transport")
        return CallFailed(klass, f"{cause.type}: {cause.message}", cause.type)
    return CallFailed("transport", str(cause or exc), None)


def budget_failure(record: PlanRecord, exhausted: Exhausted, sid: str) -> PlanFailure:
    """A nested ledger refused before ``sid`` could dispatch: traced, and the failure to raise."""
    record.event(
        "budget.exhausted",
        ledger=exhausted.scope,
        owner=exhausted.owner,
        step=sid,
        reason=str(exhausted.reason),
        detail=exhausted.detail,
    )
    return PlanFailure(exhausted.reason, exhausted.message(sid), step=sid)


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
        at = _At(item, item_index, redo, causes, scope)
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
        at: _At,
    ) -> str:
        item, item_index, redo = at.item, at.item_index, at.redo
        contract = (
            self.plan.contracts.get(step.out) if isinstance(step, AgentStep) and step.out else None
        )
        await self.pacer.start()
        try:
            # Every spliced value is defanged, a reference inside a gate's own prompt too, so
            # no upstream text can arrive as a verdict line.
            rendered = render(
                step.prompt or "",
                inputs=inputs,
                outputs=outputs,
                splice=defang,
                max_chars=PROMPT_CEILING_CHARS,
            )
        except RenderTooLong as exc:  # measured as it is built, never built whole
            raise PlanFailure(
                Reason.PROMPT_OVER_CEILING,
                f"{sid}: the prompt is over the {PROMPT_CEILING_CHARS} ceiling ({exc}); "
                "fix: pass less upstream text",
                step=sid,
            ) from None
        except RefError as exc:
            detail = self._unrendered(step.prompt or "", exc, at.prefix)
            raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}: {detail}", step=sid) from None
        upstream = outputs.get(step.deps[0]) if len(step.deps) == 1 else None
        prompt = assemble_prompt(
            step,
            rendered,
            contract=contract,
            item=item,
            has_item=item_index is not None,
            upstream=upstream if redo is None else redo.previous,
            redo_of=None if redo is None else redo.gate,
            routed_because=self.control.routed_because.get(sid),
        )
        self.pacer.charge(len(prompt))
        scope = AttemptScope(inputs, outputs, item, item_index, causes=at.causes, prefix=at.prefix)
        if isinstance(step, AgentStep) and step.iterate is not None:
            return await iterate(self, step, sid, prompt, contract, scope)
        return await self.attempts(step, sid, prompt, contract, scope)

    def _unrendered(self, prompt: str, exc: RefError, prefix: str | None) -> str:
        """Why a prompt did not render. A reference to a skipped step's output names the skip:
        a false ``when`` skips only its own step, so a step after it may run and read it."""
        try:
            segments = parse_template(prompt)
        except RefError:
            return str(exc)  # the template itself is what failed
        skipped = [
            s.name
            for s in segments
            if isinstance(s, Ref)
            and s.source == "steps"
            and self.record.steps.get(scoped(prefix, s.name)) == "skipped"
        ]
        if not skipped:
            return str(exc)
        name = skipped[0]
        return (
            f"{exc} (step {name!r} was skipped, so its output is unavailable); fix: give this "
            f"step a when that is false whenever {name!r} is skipped (its own condition, say), "
            "or an on_fail route"
        )

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
        item_index = scope.item_index
        attempts = step.attempts()
        previous: str | None = None
        for n in range(1, attempts + 1):
            last = n == attempts
            if n > 1:
                await self.pacer.start()
            if len(prompt) > PROMPT_CEILING_CHARS:
                raise PlanFailure(
                    Reason.PROMPT_OVER_CEILING,
                    f"{sid}: the prompt is {len(prompt)} characters, over the "
                    f"{PROMPT_CEILING_CHARS} ceiling; fix: pass less upstream text",
                    step=sid,
                )
            text, call_failed = await self._dispatch(step, sid, prompt, item_index, scope.causes)
            if call_failed is not None:
                if call_failed.klass in step.retry.on and not last:
                    continue
                raise PlanFailure(
                    _REASON_OF[call_failed.klass],
                    f"{sid}: {call_failed.message}",
                    step=sid,
                    cause=call_failed.code,
                )
            assert text is not None
            if contract is not None and isinstance(step, AgentStep) and step.out is not None:
                _, problem = check_output(text, step.out, self.plan.contracts)
                if problem is not None:
                    retry = retry_feedback(prompt, failure=problem, output=text, previous=previous)
                    self.record.event(
                        "contract.failed", step=sid, problem=problem, repeated=retry is None
                    )
                    if retry is None or last or "malformed-output" not in step.retry.on:
                        raise PlanFailure(Reason.MALFORMED_OUTPUT, f"{sid}: {problem}", step=sid)
                    previous, prompt = text, retry
                    continue
            if isinstance(step, AgentStep) and step.ensure:
                failed = await check_ensures(
                    self, step, sid, output=text, result=result_of(step, text), scope=scope
                )
                if failed is not None:
                    problem = f"ensure {failed.form} failed: {failed.reason}"
                    retry = retry_feedback(
                        prompt,
                        failure=problem,
                        output=text,
                        previous=previous if failed.identical_stops else None,
                    )
                    if retry is None or last or "ensure-failed" not in step.retry.on:
                        repeated = " (no retry: identical output)" if retry is None else ""
                        raise PlanFailure(
                            Reason.ENSURE_FAILED,
                            f"{sid}: ensure[{failed.index}] {failed.form} failed: "
                            f"{failed.reason}{repeated}",
                            step=sid,
                        )
                    previous, prompt = text, retry
                    continue
            if self.on_settled is not None and isinstance(step, AgentStep):
                # The capture hashes both texts and starts an activity: paced like a start.
                await self.pacer.start()
                self.pacer.charge(len(prompt) + len(text))
                count = self.counts[count_key(sid, item_index)]
                invocation = invocation_id(sid, count, item_index)
                await self.on_settled(step, sid, prompt, text, item_index, invocation)
            return text
        raise AssertionError("unreachable: the last attempt returns or raises")

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
        writes = list(step.artifacts.writes)
        declared = list(step.artifacts.reads) + writes
        if declared and self.workspace is not None:
            problems = await self._workspace(
                CHECK_PATHS, PathsInput(workspace=self.workspace, paths=declared)
            )
            if problems:
                raise PlanFailure(
                    Reason.ARTIFACT_PATH_ESCAPES_ROOT,
                    f"{sid}: at dispatch: " + "; ".join(problems),
                    step=sid,
                )
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
        file_deliverable = isinstance(step, AgentStep) and step.deliverable == "file"
        before: WriteSnapshot | None = None
        if file_deliverable and self.workspace is not None:
            before = await workflow.execute_activity(
                SNAPSHOT_WRITES,
                PathsInput(workspace=self.workspace, paths=writes),
                result_type=WriteSnapshot,
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=WORKSPACE_RETRY,
            )
        request = ModelRequest(
            model=model,
            prompt=prompt,
            role="plan",
            seed=self.seed,
            tag=invocation,
            script=_sim_output(step, sim_i),
            workspace=self.workspace,
            item=None if item_index is None else str(item_index),
        )
        timeout = timedelta(milliseconds=stage_timeout_ms(step))
        call = CallModelInput(
            run_id=self.run_id,
            phase=sid,
            index=item_index or 0,
            attempt=n - 1,
            request=request,
        )
        started = workflow.now()
        try:
            response = await self._execute(step, call, timeout, seq)
        except (ActivityError, ConsumerFailure) as exc:
            failed = failure_class(exc)
            self.settle_call(invocation, sid, model, None, started, outcome=failed.klass)
            if isinstance(exc, ConsumerFailure) and (exc.tokens or exc.usd):
                self.settle_reported(sid, exc)
            self._settled(
                sid, seq, invocation, ok=False, failure=failed.klass, message=failed.message
            )
            return None, failed
        self.settle_call(invocation, sid, model, response, started)
        if before is not None and self.workspace is not None:
            problems = await self._workspace(
                CHECK_LANDED, LandedInput(workspace=self.workspace, before=before)
            )
            if problems:
                self._settled(sid, seq, invocation, ok=False, failure="not-landed")
                raise PlanFailure(
                    Reason.DELIVERABLE_NOT_LANDED,
                    f"{sid}: " + "; ".join(problems) + " (never retried)",
                    step=sid,
                )
        self.settled_at[key] = self._settled(
            sid, seq, invocation, ok=True, chars=len(response.text)
        )
        return response.text, None

    def settle_reported(self, sid: str, failed: ConsumerFailure) -> None:
        """What a failing consumer reports it spent: into the run's ledger and every nested one
        (the work happened, as a failed engine call's wall clock did)."""
        self.ledger.budget.settle(
            input_tokens=0,
            output_tokens=failed.tokens,
            usd=failed.usd,
            transport_retries=0,
        )
        self.ledgers.settle(sid, tokens=failed.tokens, usd=failed.usd, wall_ms=0)

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

    def spend_call(self, sid: str) -> None:
        """Before a model call (a dispatch, or a judged ensure's call): one invocation out of
        every ledger that covers ``sid``; a nested ledger over its tokens/usd refuses it."""
        exhausted = self.ledgers.before_call(sid)
        if exhausted is not None:  # a settled call overran tokens/usd: no next call in scope
            raise budget_failure(self.record, exhausted, sid)
        try:
            self.ledger.spend(sid)
            self.ledgers.spend(sid)
        except BudgetInvariantViolated as exc:
            raise PlanFailure(Reason.BUDGET_INVARIANT_VIOLATED, str(exc), step=sid) from None

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
        if response is None:
            self.ledgers.settle(sid, tokens=0, usd=0.0, wall_ms=_ms_since(started))
            self.record.calls.append(CallRow(invocation, sid, model, outcome=outcome))
            return
        self._bill(invocation, sid, model, response)
        self.ledgers.settle(
            sid,
            tokens=response.usage.input_tokens + response.usage.output_tokens,
            usd=response.usd or 0.0,
            wall_ms=_ms_since(started),
        )

    def _settled(self, step_id: str, seq: int, invocation: str, **data: Any) -> int:
        settled = self.record.event(
            "settled", caused_by=[seq], step=step_id, invocation=invocation, **data
        )
        self.record.last_settled[step_id] = settled
        return settled

    def _bill(self, invocation: str, step_id: str, model: str, response: ModelResponse) -> None:
        usd = response.usd or 0.0
        self.ledger.budget.settle(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            usd=usd,
            transport_retries=response.transport_retries,
            failed=False,
        )
        self.record.calls.append(
            CallRow(
                invocation,
                step_id,
                model,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                usd=usd,
                latency_ms=response.latency_ms,
                simulated=response.simulated,
                priced=response.usd is not None,
            )
        )

    async def _workspace(self, name: str, arg: PathsInput | LandedInput) -> list[str]:
        result: list[str] = await workflow.execute_activity(
            name,
            arg,
            result_type=list[str],
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=WORKSPACE_RETRY,
        )
        return result


@dataclass(frozen=True)
class _At:
    """Where one occurrence runs: its fan-out item, a gate's redo, extra caused-by edges."""

    item: Any = None
    item_index: int | None = None
    redo: Redo | None = None
    causes: tuple[int, ...] = ()
    prefix: str | None = None


def _ms_since(started: Any) -> int:
    return max(0, int((workflow.now() - started).total_seconds() * 1000))


def _sim_output(step: AgentStep | GateStep, index: int) -> str | None:
    """``x-sim: {outputs: [...]}``: the i-th dispatch of the step returns ``outputs[i]`` (the last
    repeats). Only the sim executor reads ``script``; other providers build their requests
    without it."""
    spec = step.vendor("x-sim")
    outputs = spec.get("outputs") if isinstance(spec, dict) else None
    if not isinstance(outputs, list) or not outputs:
        return None
    chosen = outputs[min(index, len(outputs) - 1)]
    return chosen if isinstance(chosen, str) else None
