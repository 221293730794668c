"""A plan's ``tournament`` step: a child ``Tournament`` workflow whose winner is the output.

The child's calls count against the plan's budget: its boundary reserves the tournament's worst
case (``boundaries.tournament_calls``), the child is capped at that many calls, and every call
it made is spent inside the reservation when it returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from workflows.budget import BudgetLimits
    from workflows.inputs import describe_errors
    from workflows.names import TOURNAMENT
    from workflows.plan.boundaries import stage_timeout_ms
    from workflows.plan.gates import defang
    from workflows.plan.ledger import BudgetInvariantViolated
    from workflows.plan.model import TournamentStep
    from workflows.plan.reasons import Reason
    from workflows.plan.refs import RefError, RenderTooLong, render
    from workflows.plan.run_record import CallRow, PlanFailure
    from workflows.plan_run.dispatch import PROMPT_CEILING_CHARS, Dispatcher
    from workflows.tournament.types import RoleModels, TournamentInput, TournamentResult

__all__ = ["run_tournament"]


async def run_tournament(
    dispatcher: Dispatcher,
    step: TournamentStep,
    *,
    max_calls: int,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
) -> str:
    """The winner's final answer, or ``PlanFailure`` when the child fails."""
    try:
        task = render(
            step.prompt,
            inputs=inputs,
            outputs=outputs,
            splice=defang,
            max_chars=PROMPT_CEILING_CHARS,
        )
    except RenderTooLong as exc:
        # The child's every prompt holds the task; refused here, before anything is started.
        raise PlanFailure(
            Reason.PROMPT_OVER_CEILING,
            f"{step.id}: the tournament's task is over the {PROMPT_CEILING_CHARS:,}-character "
            f"prompt ceiling ({exc}); fix: pass less upstream text",
            step=step.id,
        ) from None
    except RefError as exc:
        raise PlanFailure(Reason.MALFORMED_OUTPUT, str(exc), step=step.id) from None
    record = dispatcher.record
    n = dispatcher.counts[step.id] = dispatcher.counts.get(step.id, 0) + 1
    invocation = f"{step.id}#{n}"
    model = dispatcher.models[step.id]
    spec = step.tournament
    try:
        child = TournamentInput(
            task=task,
            rubric=spec.rubric,
            profile=spec.profile,
            custom=spec.custom,
            model=model,
            models=RoleModels(judge=dispatcher.models.get(f"{step.id}/judge")),
            seed=spec.seed if spec.seed is not None else dispatcher.seed,
            budget=BudgetLimits(max_calls=max_calls),
            on_budget_exhausted="fail",
            calls=dispatcher.options,
        )
    except ValidationError as exc:
        # Raised from workflow code, it would fail the workflow task again at every retry.
        raise PlanFailure(
            Reason.MALFORMED_OUTPUT,
            f"{step.id}: the tournament's input is refused: {describe_errors(exc)}",
            step=step.id,
        ) from None
    seq = record.event(
        "dispatched",
        caused_by=record.causes(step.deps),
        step=step.id,
        invocation=invocation,
        attempt=n,
        model=model,
        child=TOURNAMENT,
    )
    record.steps[step.id] = "running"
    child_id = f"{dispatcher.run_id}.{step.id}.{n}".replace(":", "-")
    try:
        result: TournamentResult = await workflow.execute_child_workflow(
            TOURNAMENT,
            child,
            id=child_id,
            result_type=TournamentResult,
            execution_timeout=timedelta(milliseconds=stage_timeout_ms(step)),
        )
    except ChildWorkflowError as exc:
        cause = exc.cause
        detail = (
            f"{cause.type}: {cause.message}" if isinstance(cause, ApplicationError) else str(cause)
        )
        record.event("settled", caused_by=[seq], step=step.id, invocation=invocation, ok=False)
        raise PlanFailure(
            Reason.DISPATCH_DEAD,
            f"{step.id}: tournament {child_id} failed: {detail}",
            step=step.id,
            cause=cause.type if isinstance(cause, ApplicationError) else None,
        ) from None
    try:
        for _ in range(result.spent.calls):
            dispatcher.ledger.spend(step.id)
    except BudgetInvariantViolated as exc:
        raise PlanFailure(Reason.BUDGET_INVARIANT_VIOLATED, str(exc), step=step.id) from None
    spent = result.spent
    dispatcher.ledger.budget.settle(
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        usd=spent.usd,
        transport_retries=spent.transport_retries,
    )
    record.calls.append(
        CallRow(
            invocation,
            step.id,
            model,
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            usd=spent.usd,
            simulated=result.simulated,
            model_calls=spent.calls,
        )
    )
    settled = record.event(
        "settled",
        caused_by=[seq],
        step=step.id,
        invocation=invocation,
        ok=True,
        calls=spent.calls,
        winner=result.winner_id,
        child_run=result.run_id,
    )
    record.last_settled[step.id] = settled
    return result.final_answer
