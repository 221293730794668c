"""Ensure predicates and ``iterate.until`` in a plan run (docs/plans.md, "Expressions, ensure,
iterate and set").

Workflow code; every effect is an activity. Per attempt, after the output, the landed barrier
and the ``out`` contract (``dispatch``):

    expr and file_* predicates in list order (one ``evaluate_cel`` local activity for the
    expressions, one ``probe_files`` activity for the files: both side-effect free, so asking
    together and reading in order decides exactly as one by one) -> judged predicates in list
    order (one model call each, spent in the boundary's reservation) -> ``until``

The first failure ends the attempt. Each predicate checked is traced ``ensure.checked``. An
expression's error (a bound included) is data: the predicate does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from workflows.model_calls import call_model
    from workflows.model_types import CallModelInput, ModelRequest
    from workflows.plan.activity_contracts import EVALUATE_CEL, PROBE_FILES
    from workflows.plan.boundaries import stage_timeout_ms
    from workflows.plan.check_types import (
        MAX_BOUND_BYTES,
        CelOutcome,
        EvaluateCelInput,
        EvaluateCelResult,
        FileProbe,
        ProbeFilesInput,
        ProbeFilesResult,
        ProbeOutcome,
    )
    from workflows.plan.expression_rules import bound_names
    from workflows.plan.gates import gate_verdict
    from workflows.plan.model import (
        AgentStep,
        EnsureExpr,
        EnsureFileContains,
        EnsureFileExists,
        EnsureJudged,
        RunStep,
        SetStep,
    )
    from workflows.plan.predicates import (
        AttemptScope,
        bindings,
        bound_bytes,
        judge_prompt,
        judge_reason,
        judged_route_key,
    )
    from workflows.plan.prompts import count_key, invocation_id
    from workflows.plan.reasons import Reason
    from workflows.plan.refs import RefError, render
    from workflows.plan.run_record import PlanFailure, PlanRecord

if TYPE_CHECKING:
    from workflows.plan_run.dispatch import Dispatcher

__all__ = ["CheckFailure", "check_ensures", "evaluate", "until_holds"]

CEL_RETRY = RetryPolicy(maximum_attempts=3)
PROBE_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["ValueError"])


@dataclass(frozen=True)
class CheckFailure:
    form: str
    reason: str
    index: int
    identical_stops: bool
    """Whether an identical output on the next attempt ends the retries (not for file checks:
    an agent saying "done" twice may have written the file the second time)."""


async def evaluate(
    expressions: list[str], values: dict[str, Any], *, step: str | None = None
) -> list[CelOutcome]:
    """Each expression over ``values``, by the worker's evaluator (a local activity: recorded
    once, never run again on replay). Every failure is an outcome, never an exception, except
    the run's evaluation time running out (``expr-too-costly``, run-fatal, ``step``: whose)."""
    size = bound_bytes(values)
    if size > MAX_BOUND_BYTES:
        error = (
            f"the bound JSON is {size} bytes, over the {MAX_BOUND_BYTES >> 20} MiB bound; "
            "fix: read less (steps[...] binds only the steps the expression names)"
        )
        return [CelOutcome(ok=False, error=error) for _ in expressions]
    try:
        result: EvaluateCelResult = await workflow.execute_local_activity(
            EVALUATE_CEL,
            EvaluateCelInput(expressions=expressions, bindings=values),
            result_type=EvaluateCelResult,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=CEL_RETRY,
        )
    except ActivityError as exc:
        error = f"the evaluator failed: {exc.cause or exc}"
        return [CelOutcome(ok=False, error=error[:500]) for _ in expressions]
    missing = CelOutcome(ok=False, error="the evaluator gave no answer for it")
    outcomes = result.outcomes[: len(expressions)]
    for text, outcome in zip(expressions, outcomes, strict=False):
        if outcome.too_costly:
            where = f"{step}: " if step else ""
            raise PlanFailure(Reason.EXPR_TOO_COSTLY, f"{where}{text}: {outcome.error}", step=step)
    return outcomes + [missing] * (len(expressions) - len(outcomes))


def _holds(outcome: CelOutcome) -> tuple[bool, str]:
    if not outcome.ok:
        return False, f"error: {outcome.error}"
    if outcome.value is True:
        return True, "true"
    return False, f"evaluated to {_shown(outcome.value)}"


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def _event(
    record: PlanRecord,
    step_id: str,
    scope: AttemptScope,
    index: int,
    form: str,
    holds: bool,
    reason: str,
) -> None:
    data: dict[str, Any] = {"step": step_id, "index": index, "form": form}
    data |= {"holds": holds, "reason": reason}
    if scope.item_index is not None:
        data["item"] = scope.item_index
    record.event("ensure.checked", **data)


async def check_ensures(
    dispatcher: Dispatcher,
    step: AgentStep | SetStep | RunStep,
    sid: str,
    *,
    output: str,
    result: Any,
    scope: AttemptScope,
) -> CheckFailure | None:
    """The step's ensure predicates on one attempt's output, in a fixed order (``sid``: the
    step's scoped id, ``<run step>/<child>`` in a sub-flow's body)."""
    plan, record = dispatcher.plan, dispatcher.record
    member = scope.item_index is not None
    names = bound_names(step, member=member, result=True)
    exprs = [(k, p.expr) for k, p in enumerate(step.ensure) if isinstance(p, EnsureExpr)]
    outcomes: dict[int, tuple[bool, str]] = {}
    if exprs:
        texts = [t for _, t in exprs]
        values = bindings(texts, plan=plan, scope=scope, names=names, result=result)
        for (k, _), outcome in zip(exprs, await evaluate(texts, values, step=sid), strict=True):
            outcomes[k] = _holds(outcome)
    files = await _probe(dispatcher, step, scope)
    for k, predicate in enumerate(step.ensure):
        if isinstance(predicate, EnsureExpr):
            holds, reason = outcomes[k]
            # The retry's feedback names the expression that failed, as the reference does.
            reason = reason if holds else f"`{predicate.expr}` {reason}"
            form = "expr"
        elif isinstance(predicate, EnsureFileExists | EnsureFileContains):
            form = "file_exists" if isinstance(predicate, EnsureFileExists) else "file_contains"
            probe = files[k]
            if probe.escapes:
                _event(record, sid, scope, k, form, False, probe.reason)
                raise PlanFailure(
                    Reason.ARTIFACT_PATH_ESCAPES_ROOT,
                    f"{sid}: ensure[{k}] {form}: {probe.reason}",
                    step=sid,
                )
            holds, reason = probe.holds, probe.reason
        else:
            continue
        _event(record, sid, scope, k, form, holds, reason)
        if not holds:
            return CheckFailure(form, reason, k, identical_stops=form == "expr")
    for k, predicate in enumerate(step.ensure):
        if isinstance(predicate, EnsureJudged) and isinstance(step, AgentStep):
            holds, reason = await _judge(dispatcher, step, sid, k, predicate, output, scope)
            _event(record, sid, scope, k, "judged", holds, reason)
            if not holds:
                return CheckFailure("judged", reason, k, identical_stops=True)
    return None


async def _probe(
    dispatcher: Dispatcher, step: AgentStep | SetStep | RunStep, scope: AttemptScope
) -> dict[int, ProbeOutcome]:
    """The file predicates, rendered (``${...}``) and probed in one activity."""
    out: dict[int, ProbeOutcome] = {}
    probes: list[tuple[int, FileProbe]] = []
    for k, predicate in enumerate(step.ensure):
        if isinstance(predicate, EnsureFileExists):
            template, text = predicate.file_exists, None
        elif isinstance(predicate, EnsureFileContains):
            template, text = predicate.file_contains.path, predicate.file_contains.text
        else:
            continue
        try:
            path = render(template, inputs=scope.inputs, outputs=scope.outputs)
        except RefError as exc:
            out[k] = ProbeOutcome(holds=False, reason=f"the path does not render: {exc}")
            continue
        if dispatcher.workspace is None:
            out[k] = ProbeOutcome(holds=False, reason="the run has no workspace (--workspace)")
            continue
        probes.append((k, FileProbe(path=path, text=text)))
    if probes and dispatcher.workspace is not None:
        result: ProbeFilesResult = await workflow.execute_activity(
            PROBE_FILES,
            ProbeFilesInput(workspace=dispatcher.workspace, probes=[p for _, p in probes]),
            result_type=ProbeFilesResult,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=PROBE_RETRY,
        )
        for (k, _), outcome in zip(probes, result.outcomes, strict=True):
            out[k] = outcome
    return out


async def until_holds(
    dispatcher: Dispatcher, step: AgentStep, *, result: Any, scope: AttemptScope
) -> tuple[bool, str]:
    """Whether the step's ``iterate.until`` holds for this iteration's output, and why not."""
    assert step.iterate is not None
    names = bound_names(step, member=scope.item_index is not None, result=True)
    text = step.iterate.until
    values = bindings([text], plan=dispatcher.plan, scope=scope, names=names, result=result)
    (outcome,) = await evaluate([text], values, step=step.id)
    return _holds(outcome)


async def _judge(
    d: Dispatcher,
    step: AgentStep,
    sid: str,
    k: int,
    predicate: EnsureJudged,
    output: str,
    scope: AttemptScope,
) -> tuple[bool, str]:
    """One model call, spent and settled in every covering ledger like a dispatch: the
    statement, the defanged output, the verdict line."""
    model = d.models[judged_route_key(sid, k)]
    n = d.counts.get(count_key(sid, scope.item_index), 1)
    sim_i = d.judge_index[sid] = d.judge_index.get(sid, -1) + 1
    d.spend_call(sid)
    invocation = f"{invocation_id(sid, n, scope.item_index)}.judged{k}"
    seq = d.record.event(
        "dispatched",
        step=sid,
        invocation=invocation,
        attempt=n,
        model=model,
        phase="judged",
    )
    request = ModelRequest(
        model=model,
        prompt=judge_prompt(predicate.judged, output),
        role="plan",
        seed=d.seed,
        tag=invocation,
        script=_sim_judged(step, sim_i),
        workspace=d.workspace,
    )
    timeout = timedelta(milliseconds=stage_timeout_ms(step))
    call = CallModelInput(
        run_id=d.run_id,
        phase=f"{sid}#judged",
        index=scope.item_index or 0,
        attempt=sim_i,
        request=request,
    )
    started = workflow.now()
    try:
        response = await call_model(
            call,
            d.options,
            on_wait=d.on_wait,
            ledger_room=d.ledger_room,
            start_to_close_timeout=timeout,
            schedule_to_close_timeout=timeout,
        )
    except ActivityError as exc:
        d.settle_call(invocation, sid, model, None, started, outcome="transport")
        d.record.event(
            "settled", caused_by=[seq], step=sid, invocation=invocation, ok=False,
            phase="judged",
        )  # fmt: skip
        return False, f"the judge call failed: {exc.cause or exc}"
    d.settle_call(invocation, sid, model, response, started)
    d.record.event(
        "settled", caused_by=[seq], step=sid, invocation=invocation, ok=True, phase="judged"
    )
    verdict = gate_verdict(response.text)
    if verdict == "pass":
        return True, judge_reason(response.text)
    if verdict == "fail":
        return False, judge_reason(response.text)
    return False, "the judge's answer does not end with one GATE: PASS or GATE: FAIL line"


def _sim_judged(step: AgentStep, index: int) -> str | None:
    """``x-sim: {judged: [...]}``: the i-th judge call of the step returns ``judged[i]`` (the
    last repeats), as ``outputs`` does for its dispatches."""
    spec = step.vendor("x-sim")
    answers = spec.get("judged") if isinstance(spec, dict) else None
    if not isinstance(answers, list) or not answers:
        return None
    chosen = answers[min(index, len(answers) - 1)]
    return chosen if isinstance(chosen, str) else None
