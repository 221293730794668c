"""From a settled cell to its run record, and the judge scorer's prompt and parse.

Pure (pydantic, hashlib; no Temporal import): the ``Campaign`` workflow calls these between its
activities. A record that does not validate raises :class:`RecordInvalid`, which the workflow
treats as a genuine error (stop, drain, fail).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from workflows.campaign.document import CampaignDocument, JudgeScorer
from workflows.campaign.matrix import Cell
from workflows.campaign.records import MAX_VERDICT_CHARS, JudgeMetadata, RunRecord, TokenUsage
from workflows.campaign.scoring import last_number
from workflows.campaign.types import CellOutcome
from workflows.model_types import ModelResponse

__all__ = [
    "JUDGE_PROMPT",
    "RECORD_INVALID",
    "RecordInvalid",
    "build_record",
    "judge_metadata",
    "judge_prompt",
    "judge_score",
    "leader",
    "unsettled_record",
]

RECORD_INVALID = "record.invalid"
JUDGE_PROMPT = (
    "Grade the answer below against the rubric. Reply with one line of reasoning, then the "
    "score from 0 to {scale} alone on the last line.\n\nTask:\n{task}\n\nRubric:\n{rubric}\n\n"
    "Answer:\n{answer}\n"
)


class RecordInvalid(ValueError):
    code = RECORD_INVALID


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def judge_prompt(task: str, rubric: str, answer: str, *, scale: float = 1.0) -> str:
    return JUDGE_PROMPT.format(task=task, rubric=rubric, answer=answer, scale=f"{scale:g}")


def judge_score(text: str, *, scale: float = 1.0) -> tuple[float | None, str | None]:
    """``(score, None)`` from the grade on the judge's last line divided by ``scale``, or
    ``(None, why)`` when that line holds no number or a grade outside ``[0, scale]`` (never
    guessed into range: an 8 from a judge asked for 0 to 1 is refused, not read as 0.8)."""
    lines = text.strip().splitlines()
    grade = last_number(lines[-1]) if lines else None
    if grade is None:
        return None, "the judge's last line is not a number"
    if not 0 <= grade <= scale:
        return None, (
            f"the judge's grade {grade:g} is outside the scorer's scale [0, {scale:g}]: set the "
            "judge scorer's scale to the grades its model gives"
        )
    return grade / scale, None


def judge_metadata(scorer: JudgeScorer, response: ModelResponse) -> JudgeMetadata:
    """What the cell's record keeps of its judge: the model, its raw verdict (cut at
    ``MAX_VERDICT_CHARS``), the grade on its last line, the scale, the call's spend."""
    lines = response.text.strip().splitlines()
    return JudgeMetadata(
        model=scorer.model,
        answered_by=response.model,
        raw_verdict=response.text[:MAX_VERDICT_CHARS],
        verdict_cut=len(response.text) > MAX_VERDICT_CHARS,
        grade=last_number(lines[-1]) if lines else None,
        scale=scorer.scale,
        usage=TokenUsage(
            input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens
        ),
        cost_usd=response.usd or 0.0,
    )


def build_record(
    doc: CampaignDocument,
    cell: Cell,
    outcome: CellOutcome,
    *,
    calls: int,
    wall_ms: float,
    child_error: str | None,
    cancelled: bool,
    prompt_hash: str,
) -> RunRecord:
    """The cell's validated record; its failure class in the order a cell can fail.
    ``prompt_hash``: the sha256 of the effective prompt the cell's variant sends
    (``workflows/campaign/configs.py::prompt_hash``), not of the task text alone."""
    variant = doc.variant(cell.variant)
    failure, error, score = None, None, outcome.score
    if cancelled:
        failure, error = "cancelled", "cancelled before it finished"
    elif child_error is not None:
        failure, error = "runner_threw", child_error
    elif outcome.integrity_issues and doc.integrity != "log":
        failure, error = "integrity_failed", ", ".join(outcome.integrity_issues)
    elif outcome.score_error is not None or score is None:
        failure, error = "scorer_failed", outcome.score_error or "no score"
    if failure is not None:
        score = None
    on_search = doc.split in ("search", "dev")
    fields: dict[str, Any] = {
        "run_id": cell.run_id,
        "campaign": doc.campaign_id,
        "variant": cell.variant,
        "scenario": cell.scenario,
        "seed": cell.seed,
        "cell_seed": cell.child_seed,
        "split": doc.split,
        "model": outcome.model or str(variant.config.get("model", "")),
        "prompt_hash": prompt_hash,
        "config_hash": _sha({"kind": variant.kind, "config": variant.config}),
        "commit_sha": doc.commit_sha,
        "wall_ms": round(wall_ms, 3),
        "cost_usd": outcome.usd,
        "calls": calls,
        "usage": TokenUsage(input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens),
        "search_score": score if on_search else None,
        "holdout_score": None if on_search else score,
        "failure_class": failure,
        "error": error,
        "integrity_issues": outcome.integrity_issues,
        "simulated": outcome.simulated,
        "judge_metadata": outcome.judge,
    }
    try:
        return RunRecord.model_validate(fields)
    except ValidationError as exc:
        raise RecordInvalid(f"cell {cell.run_id}: {exc.errors()[0]['msg']}") from None


def unsettled_record(
    doc: CampaignDocument, cell: Cell, *, calls: int, wall_ms: float, prompt_hash: str
) -> RunRecord:
    """The record of a cell still draining when the drain bound ran out: no outcome, its
    worst-case ``calls`` counted (they may have been paid), and why."""
    outcome = CellOutcome(exists=False, completed=False, integrity_issues=["unsettled"])
    record = build_record(
        doc,
        cell,
        outcome,
        calls=calls,
        wall_ms=wall_ms,
        child_error=None,
        cancelled=True,
        prompt_hash=prompt_hash,
    )
    return record.model_copy(
        update={
            "failure_class": "unsettled",
            "error": (
                f"did not settle within the drain bound ({doc.drain_timeout_s:g} s, "
                f"drain_timeout_s): up to {calls} in-flight calls may be paid and unrecorded"
            ),
        }
    )


def leader(records: list[RunRecord]) -> tuple[str | None, float | None]:
    """The variant with the best mean score so far, and that mean."""
    scores: dict[str, list[float]] = {}
    for r in records:
        if r.score is not None:
            scores.setdefault(r.variant, []).append(r.score)
    if not scores:
        return None, None
    best = max(scores, key=lambda v: sum(scores[v]) / len(scores[v]))
    return best, sum(scores[best]) / len(scores[best])
