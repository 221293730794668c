"""The judge scorer: one model call made by the workflow after a cell settled.

It goes through ``call_model`` like every other call (raw events, spend, the cell's run id), so
its cost is the cell's; a failed call or an unparsable grade is a ``scorer_failed`` cell.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from workflows.call_options import CallOptions
    from workflows.campaign.cell_records import judge_metadata, judge_prompt, judge_score
    from workflows.campaign.document import JudgeScorer
    from workflows.campaign.matrix import Cell
    from workflows.campaign.types import CellOutcome
    from workflows.ledger.waits import LedgerRoom
    from workflows.model_calls import call_failure, call_model
    from workflows.model_types import CallModelInput, ModelRequest

__all__ = ["judge"]


async def judge(
    scorer: JudgeScorer,
    *,
    task: str,
    cell: Cell,
    outcome: CellOutcome,
    calls: CallOptions,
    ledger_room: LedgerRoom | None = None,
) -> CellOutcome:
    """The settled outcome with the judge's score (or score error) and its call's spend; with
    ``ledger_room``, a call its shared ledger refuses waits there for room instead of failing."""
    prompt = judge_prompt(task, scorer.rubric, outcome.answer or "", scale=scorer.scale)
    update: dict[str, Any] = {"answer": None, "calls": outcome.calls + 1}
    try:
        response = await call_model(
            CallModelInput(
                run_id=cell.run_id,
                phase="campaign_judge",
                index=0,
                request=ModelRequest(
                    model=scorer.model, prompt=prompt, role="judge", seed=cell.child_seed
                ),
            ),
            calls,
            ledger_room=ledger_room,
        )
    except ActivityError as exc:
        code, message = call_failure(exc)  # the code lets the workflow tell a replay miss
        update["score_error"] = f"judge call failed: {code}: {message}"
        update["score_error_code"] = code
        return outcome.model_copy(update=update)
    value, problem = judge_score(response.text, scale=scorer.scale)
    if value is None:
        update["score_error"] = problem
    else:
        update["score"] = value
    update["judge"] = judge_metadata(scorer, response)
    update |= {
        "input_tokens": outcome.input_tokens + response.usage.input_tokens,
        "output_tokens": outcome.output_tokens + response.usage.output_tokens,
        "usd": outcome.usd + (response.usd or 0.0),
    }
    return outcome.model_copy(update=update)
