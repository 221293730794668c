"""The state of a ``PlanRun`` and its message handlers: control updates, signals, queries.

The walk (``walk`` and the step modules beside it) drives the run; this base class holds what
the handlers read and change, so every rule a message is checked by lives beside the state it
guards. An update's validator and its signal form apply the same rule: a refused update never
enters history, a refused signal is recorded as ``control.refused``.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import INPUT_INVALID, InputInvalid
    from workflows.json_schemas import value_problem
    from workflows.ledger.waits import LedgerRoom
    from workflows.names import (
        QUERY_EVENTS,
        QUERY_STATUS,
        SIGNAL_EXTEND_BUDGET,
        SIGNAL_LEDGER_ROOM,
        SIGNAL_RESOLVE_GATE,
        SIGNAL_RESUME,
        UPDATE_EXTEND_BUDGET,
        UPDATE_RESOLVE_GATE,
        UPDATE_RESUME,
    )
    from workflows.plan.checkpoints import (
        CheckpointBook,
        RestorePoint,
        RevertResult,
        WalkControl,
    )
    from workflows.plan.consumer import ConsumerDesk
    from workflows.plan.control import (
        Refusal,
        check_gate_decision,
        merge_resume_args,
        parse_resume_value,
    )
    from workflows.plan.ledger import PlanLedger
    from workflows.plan.ledgers import Ledgers
    from workflows.plan.model import PauseStep, Plan
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanRecord
    from workflows.plan.run_types import (
        CaptureFailure,
        ExtendPlanBudgetInput,
        ExtendPlanBudgetResult,
        GateDecisionResult,
        LedgerStatus,
        PendingGate,
        PendingPause,
        PlanBudgetStatus,
        PlanEvent,
        PlanRunInput,
        PlanStatus,
        ResolveGateInput,
        ResumeInput,
        ResumeResult,
        RunState,
    )
    from workflows.plan.validate import Validation, validate_document
    from workflows.raw_input import NO_INPUT, decode_raw, decode_run_input

__all__ = ["CONTROL_REFUSED", "EVENTS_PAGE", "PlanRunState", "coded", "rejected"]

EVENTS_PAGE = 500
CONTROL_REFUSED = "control.refused"
_STAND_IN = PlanRunInput.model_construct(plan={}, args={})


class PlanRunState:
    @workflow.init
    def __init__(self, raw: object = NO_INPUT, *extra: object) -> None:
        decoded = decode_run_input(PlanRunInput, raw, extra)
        self.input_error = decoded if isinstance(decoded, InputInvalid) else None
        self.input = decoded if isinstance(decoded, PlanRunInput) else _STAND_IN
        self.run_id = workflow.info().workflow_id  # input.run_id, if given, is the same
        self.record = PlanRecord(now=lambda: workflow.now().isoformat())
        self.state: RunState = "starting"
        self.reason: str | None = None
        self.error: str | None = None
        self.route_label: str | None = None
        self.current: str | None = None
        self.plan: Plan | None = None
        self.ledger: PlanLedger | None = None
        self.ledgers = Ledgers()
        """The nested ledgers (a step's, a fan-out's, a sub-flow's); the run's is ``ledger``."""
        self.args: dict[str, Any] = dict(self.input.args or {})
        self.outputs: dict[str, Any] = {}
        self.typed_args: dict[str, dict[str, Any] | None] = {}
        """A pause's resume_arg -> its JSON Schema (None: the value is a string)."""
        # The plan is read here, before any message is handled: a resume that arrives in the
        # run's first workflow task is checked against its pause's schema like any other.
        self.validation: Validation | None = None
        """The plan's validation (None: the input did not decode); ``run`` fails on its errors."""
        self.bad_args: str | None = None
        """Why the typed start arguments are refused (``input.invalid``), or None."""
        if self.input_error is None:
            self.validation = validate_document(self.input.plan)
            if self.validation.ok and self.validation.plan is not None:
                self.bad_args = self._open_args(self.validation.plan)
        self.gates: dict[str, PendingGate] = {}
        self.decisions: dict[str, str] = {}
        self.deciders: dict[str, str] = {}
        """Gate step -> who decided it (``resolve_gate``'s ``by``), for ``gate.decided``."""
        self.rounds: dict[str, int] = {}
        self.epoch = 0
        self.pending_pause: PendingPause | None = None
        self.need: str | None = None
        self.on_fail_armed: set[str] = set()
        self.when_skipped: set[str] = set()
        """Scoped ids skipped by their own false ``when``: a local skip, so a step depending on
        one still runs (``workflows.plan.activation``); a route's skip is never in it."""
        self.wall_started: Any = None
        self.waited_ms = 0
        """Time spent waiting for a person (pauses, human gates, budget extensions): never
        charged to the wall budget (``waits``)."""
        self.waiting_since: datetime | None = None
        self.open_waits: list[tuple[RunState, Reason]] = []
        """The person waits open at once (a sub-flow's gate beside another's): the newest
        is the state shown; ``waiting_since`` is the first's."""
        # Consumer steps and checkpoints (docs/plans.md, "Consumer steps" and "Checkpoints"):
        # consumer_control, checkpoint_control and plan_run.checkpoints use these.
        self.desk = ConsumerDesk()
        self.consumer_steps: frozenset[str] = frozenset()
        self.plan_digest = ""
        self.control = WalkControl()
        self.book = CheckpointBook()
        self.epochs: dict[str, int] = {}
        """Step id -> its epoch, bumped when a revert finds it unsettled in the snapshot."""
        self.fingerprints: dict[str, str] = {}
        self.retired_gate_tokens: list[str] = []
        """Gate tokens a revert rotated (the newest few): refused as stale, not unknown."""
        self.resumed: list[str] = []
        self.restore_point: RestorePoint | None = None
        """``--from RUN:LABEL``: the settled steps a matching step may be restored from."""
        self.last_revert: RevertResult | None = None
        self.expired_tokens: dict[str, str] = {}
        """Gate step -> the token its deadline voided (a late decision is stale-gate-token)."""
        self.side_tasks: list[asyncio.Task[None]] = []
        """Work the walk does not wait for (escalation posts); the run's end waits for it."""
        self.reqe_debt: str | None = None
        """The re-QE debt record a same-family QE waiver owes (``reqe-due.json``)."""
        self.shipped_lines: dict[str, int] = {}
        """``trace.jsonl`` / ``calls.jsonl`` -> lines written to the run directory so far:
        later writes send only what is new (``finish.write_trace``)."""
        self.ledger_room = LedgerRoom()
        """Calls its shared ledger refused wait here (``ledger_room`` signals; preflight)."""
        self.capture_failures: list[CaptureFailure] = []
        """Training pairs not written, the first ``MAX_CAPTURE_FAILURES`` (all are traced)."""

    # -- bookkeeping ---------------------------------------------------------------------

    def settle(self, step_id: str, output: Any) -> None:
        self.outputs[step_id] = output
        self.record.steps[step_id] = "settled"

    def settle_by_message(self, step_id: str, deps: list[str], **data: Any) -> None:
        """A pause or human gate settles by a message, not a dispatch: its trace edge all the
        same, so the steps after it are caused by it."""
        seq = self.record.event(
            "settled", caused_by=self.record.causes(deps), step=step_id, ok=True, **data
        )
        self.record.last_settled[step_id] = seq

    def wait_state(self, state: RunState, reason: Reason) -> None:
        self.state = state
        self.reason = str(reason)

    def running(self) -> None:
        self.state = "running"
        self.reason = None

    def simulated(self) -> bool:
        return bool(self.record.calls) and all(c.simulated for c in self.record.calls)

    # -- control -----------------------------------------------------------------------------

    def _open_args(self, plan: Plan) -> str | None:
        """Learn each pause's type, then parse and check the typed start arguments like a
        resume's; returns the problem (the run is refused as input, never a plan reason)."""
        for step in plan.steps:
            if isinstance(step, PauseStep):
                self.typed_args[step.pause.resume_arg] = step.pause.json_schema
        parsed, problem = self.parse_args(self.args)
        if problem is not None:
            return f"args: {problem}"
        self.args = parsed
        return None

    def parse_args(self, supplied: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """Supplied args with typed pause values parsed (JSON, checked against the schema)."""
        parsed = {}
        for key, raw in supplied.items():
            if key not in self.typed_args:
                parsed[key] = raw
                continue
            schema = self.typed_args[key]
            value, problem = parse_resume_value(raw, typed=schema is not None)
            if problem is None and schema is not None:
                problem = value_problem(value, schema, key)
            if problem is not None:
                return {}, f"{key}: {problem}"
            parsed[key] = value
        return parsed, None

    def _resume(self, raw: RawValue) -> tuple[ResumeInput | None, dict[str, Any], Refused | None]:
        """The decoded input and the merged args, or why the resume is refused."""
        input = decode_raw(ResumeInput, raw)
        if isinstance(input, InputInvalid):
            return None, {}, input
        if self.state in ("completed", "failed", "cancelled"):
            return None, {}, f"the run is {self.state}"
        if self.validation is None or not self.validation.ok or self.bad_args is not None:
            return None, {}, "the run's input or plan is invalid: it fails without pausing"
        parsed, problem = self.parse_args(input.args)
        if problem is not None:
            return None, {}, InputInvalid(problem)
        merged, refusal = merge_resume_args(self.args, parsed)
        return (None, {}, refusal) if refusal is not None else (input, merged, None)

    @workflow.update(name=UPDATE_RESUME)
    def resume(self, raw: RawValue = NO_INPUT) -> ResumeResult:
        input, merged, refusal = self._resume(raw)
        if input is None:  # the validator refused it: only a changed state gets here
            raise rejected(refusal or "refused")
        self.args = merged
        self.record.event("resume.accepted", keys=sorted(input.args))
        return ResumeResult(accepted=sorted(input.args), args=self.args)

    @resume.validator
    def _check_resume(self, raw: RawValue = NO_INPUT) -> None:
        _, _, refusal = self._resume(raw)
        if refusal is not None:
            raise rejected(refusal)

    @workflow.signal(name=SIGNAL_RESUME)
    def resume_signal(self, raw: RawValue = NO_INPUT) -> None:
        input, merged, refusal = self._resume(raw)
        if input is None:
            self._refuse("resume", refusal or "refused")
            return
        self.args = merged
        self.record.event("resume.accepted", keys=sorted(input.args), via="signal")

    def _gate(self, raw: RawValue) -> tuple[ResolveGateInput | None, Refused | None]:
        input = decode_raw(ResolveGateInput, raw)
        if isinstance(input, InputInvalid):
            return None, input
        if input.step not in self.gates and input.token in self.retired_gate_tokens:
            return None, Refusal(
                Reason.STALE_GATE_TOKEN,
                f"the token for {input.step!r} was rotated by a revert; read the current one "
                "from status once the gate is open again",
            )
        pending = {step: gate.token for step, gate in self.gates.items()}
        refusal = check_gate_decision(
            pending,
            step=input.step,
            decision=input.decision,
            token=input.token,
            expired=self.expired_tokens,
        )
        return (None, refusal) if refusal is not None else (input, None)

    @workflow.update(name=UPDATE_RESOLVE_GATE)
    def resolve_gate(self, raw: RawValue = NO_INPUT) -> GateDecisionResult:
        input, refusal = self._gate(raw)
        if input is None:
            raise rejected(refusal or "refused")
        self.decisions[input.step] = input.decision
        if input.by is not None:
            self.deciders[input.step] = input.by
        return GateDecisionResult(step=input.step, decision=input.decision)

    @resolve_gate.validator
    def _check_gate(self, raw: RawValue = NO_INPUT) -> None:
        _, refusal = self._gate(raw)
        if refusal is not None:
            raise rejected(refusal)

    @workflow.signal(name=SIGNAL_RESOLVE_GATE)
    def resolve_gate_signal(self, raw: RawValue = NO_INPUT) -> None:
        input, refusal = self._gate(raw)
        if input is None:
            self._refuse("resolve_gate", refusal or "refused")
            return
        self.decisions[input.step] = input.decision
        if input.by is not None:
            self.deciders[input.step] = input.by

    def _extension(self, raw: RawValue) -> tuple[ExtendPlanBudgetInput | None, Refused | None]:
        """Every limit that can pause the run (calls, wall, tokens, USD), checked on a copy."""
        input = decode_raw(ExtendPlanBudgetInput, raw)
        if isinstance(input, InputInvalid):
            return None, input
        if self.ledger is None:
            return None, "the run has not opened its budget yet"
        reason, why = self.ledger.model_copy(deep=True).extend(**input.model_dump())
        return (input, None) if reason is None else (None, Refusal(reason, why))

    @workflow.update(name=UPDATE_EXTEND_BUDGET)
    def extend_budget(self, raw: RawValue = NO_INPUT) -> ExtendPlanBudgetResult:
        input, refusal = self._extension(raw)
        if input is None or self.ledger is None:
            raise rejected(refusal or "no budget")
        _, summary = self.ledger.extend(**input.model_dump())
        self.record.event("budget.extended", **input.model_dump(exclude_none=True))
        return ExtendPlanBudgetResult(
            calls_limit=self.ledger.calls_limit,
            wall_limit_ms=self.ledger.wall_limit_ms,
            summary=summary,
            tokens_limit=self.ledger.max_tokens,
            usd_limit=self.ledger.budget.limits.max_usd,
        )

    @extend_budget.validator
    def _check_extension(self, raw: RawValue = NO_INPUT) -> None:
        _, refusal = self._extension(raw)
        if refusal is not None:
            raise rejected(refusal)

    @workflow.signal(name=SIGNAL_LEDGER_ROOM)
    def ledger_room_signal(self, raw: RawValue = NO_INPUT) -> None:
        """The run's shared ledger has room again: calls waiting for it go on."""
        self.ledger_room.room()

    @workflow.signal(name=SIGNAL_EXTEND_BUDGET)
    def extend_budget_signal(self, raw: RawValue = NO_INPUT) -> None:
        input, refusal = self._extension(raw)
        if input is None or self.ledger is None:
            self._refuse("extend_budget", refusal or "no budget")
            return
        self.ledger.extend(**input.model_dump())
        self.record.event("budget.extended", **input.model_dump(exclude_none=True), via="signal")

    def _refuse(self, control: str, refusal: Refused) -> None:
        code, message = coded(refusal)
        self.record.refuse(control, code, message)

    def refuse_signal(self, signal: str, message: str) -> None:
        """A signal whose arguments its handler cannot take (``worker/arity``): recorded as
        refused, like one whose content is refused."""
        self.record.refuse(signal.removesuffix("_signal"), INPUT_INVALID, message)

    # -- queries -----------------------------------------------------------------------------

    def calls_spent(self) -> int:
        """Model calls spent: the run ledger's count (a tournament step's child calls and a
        call a revert abandoned included), the one number ``status`` and the result show."""
        if self.ledger is not None:
            return self.ledger.budget.spent.calls
        return sum(c.model_calls for c in self.record.calls)

    def budget_status(self) -> PlanBudgetStatus:
        ledger = self.ledger
        assert ledger is not None
        spent = ledger.budget.spent
        return PlanBudgetStatus(
            calls_limit=ledger.calls_limit,
            calls_spent=spent.calls,
            calls_left=ledger.calls_left(),
            calls_cap=ledger.calls_cap,
            wall_limit_ms=ledger.wall_limit_ms,
            wall_spent_ms=ledger.wall_spent_ms,
            wall_left_ms=ledger.wall_left_ms(),
            wall_cap_ms=ledger.wall_cap_ms,
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            usd=spent.usd,
            tokens_limit=ledger.max_tokens,
            usd_limit=ledger.budget.limits.max_usd,
            need=self.need,
            waited_ms=self.waited_ms,
        )

    @workflow.query(name=QUERY_STATUS)
    def status(self) -> PlanStatus:
        return PlanStatus(
            run_id=self.run_id,
            plan=self.plan.name if self.plan else "",
            state=self.state,
            reason=self.reason,
            step=self.current,
            steps=dict(self.record.steps),
            pending_gates=list(self.gates.values()),
            pending_pause=self.pending_pause,
            budget=self.budget_status() if self.ledger is not None else None,
            waivers=list(self.record.waivers),
            refused=list(self.record.refused),
            error=self.error,
            route=self.route_label,
            simulated=self.simulated(),
            waiting_since=self.waiting_since.isoformat() if self.waiting_since else None,
            issuances=list(self.desk.live.values()),
            checkpoints=self.book.labels(),
            resumed=list(self.resumed),
            ledgers=[
                LedgerStatus(
                    owner=n.owner,
                    scope=n.scope,
                    calls_limit=n.limits.calls,
                    calls_spent=n.calls,
                    tokens_limit=n.limits.tokens,
                    tokens_spent=n.tokens,
                    usd_limit=n.limits.usd,
                    usd_spent=n.usd,
                    wall_limit_ms=n.limits.wall_ms,
                    wall_spent_ms=n.wall_ms,
                )
                for n in self.ledgers.nested.values()
            ],
            capture_failures=list(self.capture_failures),
            deadline_decided=sorted(self.expired_tokens),
        )

    @workflow.query(name=QUERY_EVENTS)
    def events(self, cursor: int) -> list[PlanEvent]:
        return [e for e in self.record.events if e.seq > cursor][:EVENTS_PAGE]


Refused = Refusal | InputInvalid | str
"""Why a control message is refused: a plan control reason, input that does not decode (or a
typed value that does not parse), or the run's state (``control.refused``)."""


def coded(refusal: Refused) -> tuple[str, str]:
    """(code, message) of a refusal."""
    if isinstance(refusal, Refusal):
        return str(refusal.reason), refusal.message
    if isinstance(refusal, InputInvalid):
        return refusal.code, refusal.message
    return CONTROL_REFUSED, refusal


def rejected(refusal: Refused) -> ApplicationError:
    """An update's refusal, typed with its code (the caller matches on ``type``)."""
    code, message = coded(refusal)
    return ApplicationError(f"{code}: {message}", type=code, non_retryable=True)
