"""Input, result, state rows and control messages of the ``Tournament`` workflow."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workflows.bounds import BudgetTokens, BudgetUsd, CallCount, OutputTokens, Seed
from workflows.budget import BudgetLimits, BudgetSpent
from workflows.call_options import CallOptions
from workflows.inputs import StrictModel
from workflows.model_types import DEFAULT_MODEL, Price, Usage
from workflows.sim_options import ModelSpec
from workflows.tournament.critique import MIN_CRITIQUE_CHARS
from workflows.tournament.profiles import ADAPTIVE_SHARE, Profile, RankBlock
from workflows.tournament.progress import Progress, ScoreRow, Status
from workflows.tournament.prompt_sizes import prompt_size_problem, variable_bounds
from workflows.tournament.prompts import DEFAULT_RUBRIC, PromptOverrides, Style

__all__ = [
    "DEFAULT_ROUNDS",
    "GROWING_FILES",
    "CandidateRow",
    "ComparisonRow",
    "Concurrency",
    "Event",
    "ExtendBudgetInput",
    "ExtendBudgetResult",
    "GivenCandidate",
    "JudgeOrders",
    "LengthControl",
    "OnBudgetExhausted",
    "Progress",
    "RoleModels",
    "Rounds",
    "Schedule",
    "ScoreIntervals",
    "ScoreRow",
    "Status",
    "TournamentInput",
    "TournamentResult",
    "TournamentSnapshot",
    "UsageRow",
    "Verdict",
]

Schedule = Literal["k-regular", "adaptive"]
Rounds = Literal["barrier", "pipelined"]
"""barrier: every phase waits for its slowest call (the reference); pipelined: a pair is judged
as soon as both of its candidates exist, with the same calls and the same result."""
DEFAULT_ROUNDS: Rounds = "pipelined"
"""What an input without ``rounds`` runs (decided in the run's first task: runs recorded before
this default replay as barrier runs, ``behaviour.py``)."""
OnBudgetExhausted = Literal["pause", "fail"]
JudgeOrders = Literal["one", "both"]
"""one: each judge sees a pair once; both: A/B and B/A (``verdicts`` combines them). Declared
with the input it is a field of, so reading an input loads no judging code."""


# Upper bounds refuse absurd values before anything is allocated; preflight then refuses a
# run whose history would outgrow Temporal's limits (see preflight.HISTORY_EVENT_BUDGET).
MAX_CONCURRENCY = 256
MAX_INVALID_JSON_RETRIES = 10
MAX_CRITIQUE_CHARS = 1_000_000
MAX_GIVEN_CANDIDATES = 1_000
MAX_JUDGES = 9
MAX_BOOTSTRAP_RESAMPLES = 10_000
DEFAULT_BOOTSTRAP_RESAMPLES = 1_000
DEFAULT_WRITE_INTERVAL_S = 10.0
MAX_WRITE_INTERVAL_S = 86_400.0
GIVEN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

_BUILT_AT_FIRST_USE = ConfigDict(defer_build=True)
"""The rows, snapshot and control messages a worker validates and a command that starts and
reads runs never does: their validators are built at first use, not at import."""


class RoleModels(StrictModel):
    """A model per role; None falls back to ``TournamentInput.model``. No finalizer if None."""

    generate: ModelSpec | None = None
    judge: ModelSpec | None = None
    mutate: ModelSpec | None = None
    finalize: ModelSpec | None = None


class Concurrency(StrictModel):
    """Model calls in flight at once, per phase."""

    generate: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    judge: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    mutate: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)


class GivenCandidate(StrictModel):
    """A candidate supplied by the caller (the ``rank`` service): no generation call."""

    id: str = Field(description="[A-Za-z0-9][A-Za-z0-9._-]*, at most 64 characters")
    text: str

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, value: str) -> str:
        # An id becomes a file name in reports; say the rule and the fix, not a regex.
        if not GIVEN_ID.fullmatch(value):
            raise ValueError(
                "a candidate id must start with a letter or digit and use only letters, "
                "digits, '.', '_' and '-' (at most 64 characters): rename the candidate"
            )
        return value


class TournamentInput(StrictModel):
    """Untrusted: decoded inside the workflow (``workflows/inputs.py``), unknown fields refused."""

    task: str = Field(min_length=1)
    rubric: str | None = None
    profile: str | None = Field(default="quick", description="quick | balanced | paper")
    custom: Profile | None = Field(default=None, description="n, k, t, m, lambda; beats profile")
    model: ModelSpec = DEFAULT_MODEL
    models: RoleModels = RoleModels()
    prompt_style: Style = "general"
    prompts: PromptOverrides | None = None
    budget: BudgetLimits = BudgetLimits()
    prices: dict[str, Price] = Field(default={}, description='USD rates keyed "provider:model"')
    concurrency: Concurrency = Concurrency()
    rank: RankBlock | None = None
    schedule: Schedule = "k-regular"
    rounds: Rounds | None = Field(
        default=None,
        description="pipelined: judge a pair once both candidates exist (same result, sooner); "
        "barrier: each phase waits for the last call of the one before; None: pipelined",
    )
    seed: Seed | None = Field(default=None, description="None: drawn once and recorded")
    run_id: str | None = None
    include_raw_outputs: bool = False
    on_budget_exhausted: OnBudgetExhausted = "pause"
    invalid_json_retries: int = Field(default=1, ge=0, le=MAX_INVALID_JSON_RETRIES)
    critique_chars: int = Field(default=16_000, ge=MIN_CRITIQUE_CHARS, le=MAX_CRITIQUE_CHARS)
    output_token_caps: dict[str, OutputTokens] = Field(
        default={}, description="max_output_tokens per call by prompt role; unset: built-in caps"
    )
    include_prompts: bool = Field(
        default=False, description="store every rendered prompt under prompts/<sha256>.json"
    )
    candidates: list[GivenCandidate] | None = Field(
        default=None,
        max_length=MAX_GIVEN_CANDIDATES,
        description="rank these instead of generating; needs t = 0",
    )
    calls: CallOptions = CallOptions()
    judge_orders: JudgeOrders = Field(
        default="one",
        description="both: judge every pair A/B and B/A (agreement a win, else a tie); 2x calls",
    )
    judges: list[ModelSpec] | None = Field(
        default=None,
        min_length=2,
        max_length=MAX_JUDGES,
        description="a judge panel (replaces models.judge): each pair by majority, else a tie",
    )
    bootstrap_resamples: int = Field(
        default=DEFAULT_BOOTSTRAP_RESAMPLES,
        ge=0,
        le=MAX_BOOTSTRAP_RESAMPLES,
        description="resamples of the final comparisons behind each score's 95% interval; 0: none",
    )
    adaptive_share: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="adaptive schedule: the share of each judging phase's k-regular pairs it "
        "judges (at least n of them); None: 0.3 (ponder think --m sets 1: the degree given)",
    )
    length_control: bool = Field(
        default=False,
        description="fit Bradley-Terry with a length term (as the public arena's style "
        "control): scores net of the judge's preference for longer answers",
    )
    weight_by_confidence: bool = Field(
        default=False,
        description="weigh each verdict by the judge's confidence: 1 + 2*confidence (a sure "
        "verdict counts three times, as Arena-Hard counts a strong preference)",
    )
    write_interval_s: float = Field(
        default=DEFAULT_WRITE_INTERVAL_S,
        ge=0,
        le=MAX_WRITE_INTERVAL_S,
        description="least seconds between writes of a running run's files (0: at every phase); "
        "a pause and the run's end always write",
    )

    @field_validator("judges")
    @classmethod
    def _judges_differ(cls, value: list[str] | None) -> list[str] | None:
        repeated = sorted({j for j in value or [] if (value or []).count(j) > 1})
        if repeated:
            raise ValueError(
                f"judge {repeated[0]} is named twice: a panel needs different models "
                "(preferably of different families)"
            )
        return value

    @model_validator(mode="after")
    def _one_judge_source(self) -> TournamentInput:
        if self.judges is not None and self.models.judge is not None:
            raise ValueError(
                "give either judges (a panel) or models.judge (one judge), not both: "
                "drop models.judge or put it in the panel"
            )
        return self

    @model_validator(mode="after")
    def _prompts_fit(self) -> TournamentInput:
        # Checked at decode, before the workflow builds any prompt: a template naming a
        # variable thousands of times would otherwise build its prompt at every call.
        bounds = variable_bounds(
            task=self.task,
            rubric=self.rubric or DEFAULT_RUBRIC,
            given=None if self.candidates is None else [c.text for c in self.candidates],
            critique_chars=self.critique_chars,
        )
        problem = prompt_size_problem(bounds, style=self.prompt_style, overrides=self.prompts)
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def judge_panel(self) -> list[str]:
        """The judges of every pair: the panel, else the one judge model."""
        return list(self.judges) if self.judges else [self.models.judge or self.model]

    @property
    def adaptive_pairs_share(self) -> float | None:
        """The adaptive schedule's share of the k-regular pairs; None: a k-regular schedule."""
        if self.schedule != "adaptive":
            return None
        return ADAPTIVE_SHARE if self.adaptive_share is None else self.adaptive_share

    @property
    def calls_per_pair(self) -> int:
        return len(self.judge_panel) * (2 if self.judge_orders == "both" else 1)


CandidateKind = Literal["initial", "mutation", "elite-copy"]
CandidateStatus = Literal["generated", "mutated", "elite", "discarded"]


class CandidateRow(BaseModel):
    model_config = _BUILT_AT_FIRST_USE

    id: str
    generation: int
    kind: CandidateKind
    parent_id: str | None = None
    status: CandidateStatus
    discard_reason: str | None = None
    text: str
    model: str
    provider: str
    usage: Usage
    created_at: str
    simulated: bool = False


class Verdict(BaseModel):
    """One judge call's raw verdict on a pair, in the order that judge was shown it."""

    model_config = _BUILT_AT_FIRST_USE

    judge: str
    presented_a: str
    presented_b: str
    winner: Literal["A", "B", "tie"]
    confidence: float | None = None
    attempts: int = 1


class ComparisonRow(BaseModel):
    model_config = _BUILT_AT_FIRST_USE

    id: str
    phase: str
    generation: int | None
    presented_a: str
    presented_b: str
    scheduled_a: str
    scheduled_b: str
    winner: Literal["A", "B", "tie"]
    confidence: float | None
    critique_a: str
    critique_b: str
    model: str
    provider: str
    attempts: int
    usage: Usage
    raw_outputs: list[str] | None = None
    verdicts: list[Verdict] | None = Field(
        default=None,
        description="both orders or a panel: every call's verdict (winner is their combination)",
    )


class LengthControl(BaseModel):
    """The length term of a length-controlled fit (``style_control``): the log-odds the longer
    candidate gains in a comparison, with its 95% (Wald) interval (``additive``), or the share
    of verdicts between different lengths the longer won whatever the quality, with its 95%
    interval from the marginal likelihood (``mixture``)."""

    model_config = _BUILT_AT_FIRST_USE

    coefficient: float
    low: float
    high: float
    standard_error: float
    comparisons: int
    differing: int
    """Comparisons between candidates of different lengths."""
    significant: bool
    model: Literal["additive", "mixture"] = "additive"
    identified: bool = True
    """False: the comparisons cannot tell length from the candidates' own strength (only the
    penalty does), and the coefficient and its interval mean nothing."""


class ScoreIntervals(BaseModel):
    """Bootstrap 95% intervals of the final scores, per candidate id (empty: none made)."""

    model_config = _BUILT_AT_FIRST_USE

    resamples: int
    requested: int
    seed: int
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    top_share: dict[str, float] = Field(
        default={}, description="share of resamples in which the candidate has the top score"
    )
    length_control: LengthControl | None = None
    """With ``length_control``: the final fit's length coefficient (held fixed in the refits)."""
    method: Literal["percentile", "likelihood"] = "percentile"
    """How ``low`` and ``high`` were made: the resamples' percentiles, or profile likelihood."""


class UsageRow(BaseModel):
    model_config = _BUILT_AT_FIRST_USE

    usage_id: str
    ts: str
    phase: str
    role: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    total_tokens: int = 0
    usd: float = 0.0
    latency_ms: float = 0.0
    transport_retries: int = 0
    outcome: Literal["success", "failed"]
    error_code: str | None = None
    prompt_sha256: str | None = None
    priced: bool = Field(default=True, description="False: no price known, usd is not a cost")


class Event(BaseModel):
    model_config = _BUILT_AT_FIRST_USE

    seq: int
    ts: str
    type: str
    data: dict[str, Any] = {}


class ExtendBudgetInput(StrictModel):
    """New absolute limits; fields left None keep their current value.

    Control input is untrusted like the run's input: the update and the signal take it raw and
    decode it themselves, so a malformed one is refused (update) or recorded as refused (signal).
    """

    model_config = _BUILT_AT_FIRST_USE

    max_calls: CallCount | None = None
    max_input_tokens: BudgetTokens | None = None
    max_output_tokens: BudgetTokens | None = None
    max_usd: BudgetUsd | None = None


class ExtendBudgetResult(BaseModel):
    model_config = _BUILT_AT_FIRST_USE

    budget: BudgetLimits
    spent: BudgetSpent


GROWING_FILES = {
    "candidates": "candidates.jsonl",
    "comparisons": "comparisons.jsonl",
    "scores": "scores.jsonl",
    "usage": "usage.jsonl",
    "events": "events.jsonl",
}
"""A snapshot's row lists and the file each becomes, a row a line: written incrementally."""


class TournamentSnapshot(BaseModel):
    """Everything the artifact writer needs; timestamps come from ``workflow.now()``."""

    model_config = _BUILT_AT_FIRST_USE

    run_id: str
    chain: str | None = None
    """The writing workflow's ``first_execution_run_id`` (the run store's claim)."""
    status: Status
    input: TournamentInput
    seed: int
    profile: Profile | None
    profile_name: str | None
    candidates: list[CandidateRow]
    populations: dict[int, list[str]]
    comparisons: list[ComparisonRow]
    scores: list[ScoreRow]
    usage: list[UsageRow]
    events: list[Event]
    budget: BudgetLimits
    spent: BudgetSpent
    winner_id: str | None = None
    final_answer: str | None = None
    final_answer_is_postprocessed: bool = False
    error: str | None = None
    written_at: str
    write_seq: int | None = None
    """The write's number in its run (1, 2, ...; with ``written_at``, its place in the run's
    order): the activity writes nothing over the files of a later write (an attempt that ran
    on after its worker gave it up). None: a write an older workflow scheduled, unordered."""
    prompts: dict[str, dict[str, str]] = Field(
        default={}, description="rendered prompts by sha256 not yet written (include_prompts)"
    )
    intervals: ScoreIntervals | None = None
    """The final scores' bootstrap intervals, once made."""
    progress: Progress | None = None
    """The progress query's answer as of this write: an ended run's is what the query would
    answer from then on, so ``ponder status`` reads it from the run store (``progress.json``)."""
    started_at: str | None = None
    """When the run started (the workflow's start time), for the status view's elapsed time."""
    after_lines: dict[str, int] = {}
    """Lines a ``.jsonl`` file named here already holds from earlier writes: its list holds
    only the rows after them (empty: every list is whole, as runs before incremental writes
    sent them)."""


class TournamentResult(BaseModel):
    run_id: str
    status: Status
    winner_id: str
    final_answer: str
    leaderboard: list[ScoreRow]
    spent: BudgetSpent
    run_dir: str
    simulated: bool = False
