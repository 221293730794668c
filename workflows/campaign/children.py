"""A cell's child workflow (``Ask``, ``Tournament`` or ``PlanRun`` by the variant's kind).

The child's id is the cell's deterministic run id, so a restarted campaign finds the run its
cell already started. How a child ended becomes a cell failure here: cancelled (by the owner or
by a genuine error's drain) or ``runner_threw`` with the child's own error code.
"""

from __future__ import annotations

import asyncio
import json

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.ask_types import AskResult
    from workflows.campaign.configs import ask_input, final_step, plan_input, tournament_input
    from workflows.campaign.document import CampaignDocument, JudgeScorer
    from workflows.campaign.matrix import Cell
    from workflows.names import ASK, PLAN_RUN, TOURNAMENT
    from workflows.plan.run_types import PlanRunResult
    from workflows.tournament.types import TournamentResult

__all__ = ["CHILD_ENDED", "child_failure", "run_child"]


async def run_child(doc: CampaignDocument, cell: Cell, reserved: int) -> str | None:
    """Run the cell's child to its end; a plan cell's answer (its last step's output, None
    when the run ended before that step: the settle step then finds no outcome).

    Single and tournament cells leave their answer in their run directory for the settle step;
    a plan run keeps no answer file, so its answer travels back through the workflow.
    """
    variant, scenario = doc.variant(cell.variant), doc.scenario(cell.scenario)
    if variant.kind == "plan":
        plan = plan_input(
            variant, task=scenario.task, seed=cell.child_seed, run_id=cell.run_id, calls=doc.calls
        )
        result = await workflow.execute_child_workflow(
            PLAN_RUN, plan, id=cell.run_id, result_type=PlanRunResult
        )
        last = final_step(variant)
        if last not in result.outputs:
            return None  # ended on a terminal route before its last step: no answer
        output = result.outputs[last]
        return output if isinstance(output, str) else json.dumps(output)
    if variant.kind == "single":
        ask = ask_input(
            variant, task=scenario.task, seed=cell.child_seed, run_id=cell.run_id, calls=doc.calls
        )
        await workflow.execute_child_workflow(ASK, ask, id=cell.run_id, result_type=AskResult)
        return None
    judge = int(isinstance(scenario.scorer, JudgeScorer))
    tournament = tournament_input(
        variant,
        task=scenario.task,
        seed=cell.child_seed,
        run_id=cell.run_id,
        max_calls=reserved - judge,  # the judge scorer's call is the cell's, not the child's
        calls=doc.calls,
    )
    await workflow.execute_child_workflow(
        TOURNAMENT, tournament, id=cell.run_id, result_type=TournamentResult
    )
    return None


def child_failure(exc: BaseException, *, stopping: bool) -> str | None:
    """``None`` when the child was cancelled, else ``"<code>: <message>"`` of its failure.

    A child we cancelled may still end FAILED (it reports its own interrupted call), so while
    the campaign is stopping every failure counts as a cancel.
    """
    if is_cancelled_exception(exc) or stopping:
        return None
    cause = exc.cause if isinstance(exc, ChildWorkflowError) else None
    code = cause.type if isinstance(cause, ApplicationError) and cause.type else "error"
    message = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
    return f"{code}: {message}"


CHILD_ENDED = (asyncio.CancelledError, ChildWorkflowError)
"""What awaiting a cell's child may raise that is the cell's outcome, not a bug."""
