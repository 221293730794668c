"""A cell's child workflow (``Ask``, ``Tournament`` or ``PlanRun`` by the variant's kind).

The child's id is the cell's deterministic run id, so a restarted campaign finds the run its
cell already started. How a child ended becomes a cell failure here: cancelled (by the owner or
by a genuine error's drain) or ``runner_threw`` with the child's own error code, and for a plan
the code of the failed call underneath its closed reason (the failure's structured detail).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.ask_types import AskResult
    from workflows.campaign.configs import ask_input, final_step, plan_input, tournament_input
    from workflows.campaign.document import CampaignDocument, JudgeScorer
    from workflows.campaign.matrix import Cell
    from workflows.names import ASK, PLAN_RUN, TOURNAMENT
    from workflows.plan.run_types import PlanFailureDetail, PlanRunResult
    from workflows.tournament.types import TournamentResult

__all__ = ["CHILD_ENDED", "ChildFailure", "child_failure", "run_child"]


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


@dataclass(frozen=True)
class ChildFailure:
    """How a cell's child failed: its error type and message, and for a plan run the type of
    the failed call under its closed reason (``dispatch-dead`` over ``provider.replay_miss``)."""

    code: str
    message: str
    cause: str | None = None

    @property
    def text(self) -> str:
        """``"<code>: <message>"``, the cell record's error."""
        return f"{self.code}: {self.message}"

    def is_a(self, code: str) -> bool:
        """The child failed with ``code``, its own or its failed call's."""
        return code in (self.code, self.cause)


def child_failure(exc: BaseException, *, stopping: bool) -> ChildFailure | None:
    """``None`` when the child was cancelled, else how it failed.

    A child we cancelled may still end FAILED (it reports its own interrupted call), so while
    the campaign is stopping every failure counts as a cancel.
    """
    if is_cancelled_exception(exc) or stopping:
        return None
    cause = exc.cause if isinstance(exc, ChildWorkflowError) else None
    if not isinstance(cause, ApplicationError):
        return ChildFailure("error", str(cause or exc))
    return ChildFailure(
        cause.type or "error", cause.message, PlanFailureDetail.of(cause.details).cause
    )


CHILD_ENDED = (asyncio.CancelledError, ChildWorkflowError)
"""What awaiting a cell's child may raise that is the cell's outcome, not a bug."""
