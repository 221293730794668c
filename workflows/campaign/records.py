"""The run record: one validated row per cell (``records.jsonl``).

Pure (pydantic only). The score sits under ``holdout_score`` or ``search_score`` by the
campaign's split; a failed cell has no score and a ``failure_class``. A record that does not
validate is a genuine error: the campaign stops, drains and fails.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

__all__ = [
    "MAX_VERDICT_CHARS",
    "Decision",
    "FailureClass",
    "JudgeMetadata",
    "RunRecord",
    "TokenUsage",
    "failed",
    "was_cancelled",
]

MAX_VERDICT_CHARS = 4_000
"""A judge's raw verdict kept in its cell's record (the rest is cut, and ``verdict_cut`` says so:
the judge is asked for one line of reasoning and the grade)."""

Decision = Literal["promote", "hold", "equivalent", "reject", "needs_more_data"]
FailureClass = Literal[
    "runner_threw", "integrity_failed", "scorer_failed", "cancelled", "unsettled"
]
"""``unsettled``: the campaign stopped and the cell was still draining its in-flight calls when
the drain bound ran out; those calls may be paid, and are counted at the cell's worst case."""


class TokenUsage(BaseModel):
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class JudgeMetadata(BaseModel):
    """Who judged a cell scored by a ``judge`` scorer, and what it said (the reference's
    ``judgeMetadata``): a cell's score can be audited against the verdict it was read from."""

    model_config = {"extra": "forbid", "allow_inf_nan": False}

    model: str = Field(description="the judge as the scorer names it (provider:model)")
    answered_by: str = Field(
        default="", description="the model that answered, as its provider names it"
    )
    raw_verdict: str = Field(max_length=MAX_VERDICT_CHARS, description="the judge's reply")
    verdict_cut: bool = Field(
        default=False, description=f"longer than {MAX_VERDICT_CHARS} characters"
    )
    grade: float | None = Field(default=None, description="the number on the verdict's last line")
    scale: float = Field(gt=0)
    usage: TokenUsage = TokenUsage()
    cost_usd: float = Field(default=0.0, ge=0)


class RunRecord(BaseModel):
    model_config = {"extra": "forbid", "allow_inf_nan": False}

    run_id: str = Field(min_length=1)
    campaign: str = Field(min_length=1)
    variant: str = Field(min_length=1)
    scenario: str = Field(min_length=1)
    seed: int = Field(ge=0)
    cell_seed: int = Field(default=0, ge=0, description="the seed the cell's child ran with")
    split: Literal["search", "dev", "holdout"]
    model: str = Field(description="provider:model (with a dated snapshot when known)")
    prompt_hash: str = Field(description="sha256 of the effective prompt sent to the model")
    config_hash: str
    commit_sha: str = Field(min_length=1)
    wall_ms: float = Field(ge=0)
    cost_usd: float = Field(ge=0)
    calls: int = Field(default=0, ge=0)
    usage: TokenUsage = TokenUsage()
    holdout_score: float | None = None
    search_score: float | None = None
    failure_class: FailureClass | None = None
    error: str | None = None
    integrity_issues: list[str] = []
    simulated: bool = False
    judge_metadata: JudgeMetadata | None = Field(
        default=None, description="the judge's model and raw verdict, when a judge scored it"
    )

    @property
    def score(self) -> float | None:
        return self.search_score if self.split in ("search", "dev") else self.holdout_score

    @model_validator(mode="after")
    def _one_score(self) -> RunRecord:
        scored = self.search_score if self.split in ("search", "dev") else self.holdout_score
        other = self.holdout_score if self.split in ("search", "dev") else self.search_score
        if other is not None:
            raise ValueError(f"a {self.split} record carries its score under the other split")
        if self.failure_class is None and scored is None:
            raise ValueError("a cell without a failure class needs a score")
        if self.failure_class is not None and scored is not None:
            raise ValueError("a failed cell has no score")
        return self


def failed(record: RunRecord) -> bool:
    """The cell failed: it has a failure class other than ``cancelled`` (a cancelled cell was
    stopped by its owner, not a failure of the variant; it is counted apart)."""
    return record.failure_class is not None and record.failure_class != "cancelled"


def was_cancelled(record: RunRecord) -> bool:
    return record.failure_class == "cancelled"
