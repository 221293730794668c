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
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import INPUT_INVALID, InputInvalid
    from workflows.json_schemas import value_problem
    from workflows.names import (
        QUERY_EVENTS,
        QUERY_STATUS,
        SIGNAL_EXTEND_BUDGET,
        SIGNAL_RESOLVE_GATE,
        SIGNAL_RESUME,
        UPDATE_EXTEND_BUDGET,
        UPDATE_RESOLVE_GATE,
        UPDATE_RESUME,
    )
    from workflows.plan.control import (
        Refusal,
        check_gate_decision,
        merge_resume_args,
        parse_resume_value,
    )
    from workflows.plan.ledger import PlanLedger
    from workflows.plan.ledgers import Ledgers
    from workflows.plan.model import Plan
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
    from workflows.raw_input import NO_INPUT, decode_run_input

__all__ = ["EVENTS_PAGE", "PlanRunState"]

EVENTS_PAGE = 500
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
        self.gates: dict[str, PendingGate] = {}
        self.decisions: dict[str, str] = {}
        self.rounds: dict[str, int] = {}
        self.epoch = 0
        self.pending_pause: PendingPause | None = None
        self.need: str | None = None
        self.on_fail_armed: set[str] = set()
        self.wall_started: Any = None
        self.waited_ms = 0
        """Time spent waiting for a person (pauses, human gates, budget extensions): never
        charged to the wall budget (``waits``)."""
        self.waiting_since: datetime | None = None
        self.expired_tokens: dict[str, str] = {}
        """Gate step -> the token its deadline voided (a late decision is stale-gate-token)."""
        self.side_tasks: list[asyncio.Task[None]] = []
        """Work the walk does not wait for (escalation posts); the run's end waits for it."""
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

    def _resume_refusal(
        self, supplied: dict[str, Any]
    ) -> tuple[dict[str, Any], Refusal | str | None]:
        if self.state in ("completed", "failed", "cancelled"):
            return {}, f"the run is {self.state}"
        parsed, problem = self.parse_args(supplied)
        if problem is not None:
            return {}, f"{INPUT_INVALID}: {problem}"
        merged, refusal = merge_resume_args(self.args, parsed)
        return merged, refusal

    @workflow.update(name=UPDATE_RESUME)
    def resume(self, input: ResumeInput) -> ResumeResult:
        merged, refusal = self._resume_refusal(input.args)
        if refusal is not None:  # the validator refused it: only a changed state gets here
            raise ApplicationError(_refusal_text(refusal), type="control.refused")
        self.args = merged
        self.record.event("resume.accepted", keys=sorted(input.args))
        return ResumeResult(accepted=sorted(input.args), args=self.args)

    @resume.validator
    def _check_resume(self, input: ResumeInput) -> None:
        _, refusal = self._resume_refusal(input.args)
        if refusal is not None:
            raise _rejected(refusal)

    @workflow.signal(name=SIGNAL_RESUME)
    def resume_signal(self, input: ResumeInput) -> None:
        merged, refusal = self._resume_refusal(input.args)
        if refusal is not None:
            self._refuse("resume", refusal)
            return
        self.args = merged
        self.record.event("resume.accepted", keys=sorted(input.args), via="signal")

    def _gate_refusal(self, input: ResolveGateInput) -> Refusal | None:
        pending = {step: gate.token for step, gate in self.gates.items()}
        return check_gate_decision(
            pending,
            step=input.step,
            decision=input.decision,
            token=input.token,
            expired=self.expired_tokens,
        )

    @workflow.update(name=UPDATE_RESOLVE_GATE)
    def resolve_gate(self, input: ResolveGateInput) -> GateDecisionResult:
        refusal = self._gate_refusal(input)
        if refusal is not None:
            raise ApplicationError(_refusal_text(refusal), type=str(refusal.reason))
        self.decisions[input.step] = input.decision
        return GateDecisionResult(step=input.step, decision=input.decision)

    @resolve_gate.validator
    def _check_gate(self, input: ResolveGateInput) -> None:
        refusal = self._gate_refusal(input)
        if refusal is not None:
            raise _rejected(refusal)

    @workflow.signal(name=SIGNAL_RESOLVE_GATE)
    def resolve_gate_signal(self, input: ResolveGateInput) -> None:
        refusal = self._gate_refusal(input)
        if refusal is not None:
            self._refuse("resolve_gate", refusal)
            return
        self.decisions[input.step] = input.decision

    def _extension_refusal(self, input: ExtendPlanBudgetInput) -> str | None:
        if self.ledger is None:
            return "the run has not opened its budget yet"
        reason, why = self.ledger.model_copy(deep=True).extend(
            calls=input.calls, wall_ms=input.wall_ms
        )
        return None if reason is None else f"{reason}: {why}"

    @workflow.update(name=UPDATE_EXTEND_BUDGET)
    def extend_budget(self, input: ExtendPlanBudgetInput) -> ExtendPlanBudgetResult:
        refusal = self._extension_refusal(input)
        if refusal is not None or self.ledger is None:
            raise ApplicationError(refusal or "no budget", type="control.refused")
        _, summary = self.ledger.extend(calls=input.calls, wall_ms=input.wall_ms)
        self.record.event("budget.extended", calls=input.calls, wall_ms=input.wall_ms)
        return ExtendPlanBudgetResult(
            calls_limit=self.ledger.calls_limit,
            wall_limit_ms=self.ledger.wall_limit_ms,
            summary=summary,
        )

    @extend_budget.validator
    def _check_extension(self, input: ExtendPlanBudgetInput) -> None:
        if self.ledger is None:
            raise _rejected("the run has not opened its budget yet")
        reason, why = self.ledger.model_copy(deep=True).extend(
            calls=input.calls, wall_ms=input.wall_ms
        )
        if reason is not None:
            raise _rejected(Refusal(reason, why))

    @workflow.signal(name=SIGNAL_EXTEND_BUDGET)
    def extend_budget_signal(self, input: ExtendPlanBudgetInput) -> None:
        refusal = self._extension_refusal(input)
        if refusal is not None or self.ledger is None:
            self.record.refused.append(f"extend_budget: {refusal}")
            self.record.event("control.refused", control="extend_budget", message=refusal)
            return
        self.ledger.extend(calls=input.calls, wall_ms=input.wall_ms)
        self.record.event("budget.extended", calls=input.calls, wall_ms=input.wall_ms, via="signal")

    def _refuse(self, control: str, refusal: Refusal | str) -> None:
        if isinstance(refusal, Refusal):
            self.record.refuse(control, refusal.reason, refusal.message)
        else:
            self.record.refused.append(f"{control}: {refusal}")
            self.record.event("control.refused", control=control, message=refusal)

    # -- queries -----------------------------------------------------------------------------

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


def _refusal_text(refusal: Refusal | str) -> str:
    return refusal if isinstance(refusal, str) else f"{refusal.reason}: {refusal.message}"


def _rejected(refusal: Refusal | str) -> ApplicationError:
    """A validator's refusal (it never enters history), coded: the plan reason as the type,
    so a client shows the reason as the code; other refusals are ``control.refused``."""
    if isinstance(refusal, Refusal):
        return ApplicationError(refusal.message, type=str(refusal.reason), non_retryable=True)
    return ApplicationError(refusal, type="control.refused", non_retryable=True)
