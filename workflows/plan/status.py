"""What a plan run's status query answers (``PlanStatus``), kept in ``progress.json`` at its end.

A module of its own, apart from ``workflows.plan.run_types`` (which loads the plan language
behind a run's input, about a tenth of a second): ``ponder status`` of a plan run reads only this.
Fields are added only with defaults, so saved histories keep replaying.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "CaptureFailure",
    "Issuance",
    "LedgerStatus",
    "PendingGate",
    "PendingPause",
    "PlanBudgetStatus",
    "PlanStatus",
    "RunState",
]

RunState = Literal[
    "starting",
    "running",
    "awaiting_budget",
    "awaiting_wall_clock",
    "awaiting_input",
    "awaiting_gate",
    "awaiting_consumer",
    "completed",
    "failed",
    "cancelled",
]


class Issuance(BaseModel):
    """One attempt of a consumer step handed to an external executor."""

    step: str
    item: int | None = None
    attempt: int
    epoch: int
    token: str
    invocation: str
    issued_at: str
    deadline_at: str
    """After this the token is void and the attempt fails ``dispatch-timeout``."""


class PendingGate(BaseModel):
    step: str
    token: str
    decisions: list[str] = ["approve", "revise", "kill"]
    round: int = 0
    deadline_at: str | None = None
    """When ``default`` decides if nobody has (ISO 8601, UTC); None: the gate waits forever."""
    default: str | None = None
    escalate_at: str | None = None
    """When the gate escalates (``gate.escalated``, a post to ``notify``) if still undecided."""
    escalated: bool = False
    notify: str | None = None
    """The worker's notifier the escalation posts to (its name, never its URL)."""


class CaptureFailure(BaseModel):
    """A training pair that was not written (``capture.failed``): never a run outcome."""

    step: str
    mode: Literal["capture", "backfill"] | None = None
    reason: Literal["threw", "unserializable", "empty-output", "io"]
    detail: str | None = Field(default=None, max_length=501)


class PendingPause(BaseModel):
    step: str
    state: str
    resume_arg: str
    json_schema: dict[str, Any] | None = None


class PlanBudgetStatus(BaseModel):
    calls_limit: int
    calls_spent: int
    calls_left: int
    calls_cap: int
    wall_limit_ms: int
    wall_spent_ms: int
    wall_cap_ms: int
    wall_left_ms: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    tokens_limit: int | None = None
    """Input + output tokens the run may spend (None: no limit)."""
    usd_limit: float | None = None
    need: str | None = None
    """Why the run waits for an extension (awaiting_budget / awaiting_wall_clock)."""
    waited_ms: int = 0
    """Time the run waited for a person (pauses, human gates, budget extensions), the open
    wait excluded (see ``PlanStatus.waiting_since``). Never counted in ``wall_spent_ms``: the
    wall budget is agent time."""


class LedgerStatus(BaseModel):
    """A nested ledger (docs/plans.md, "Sub-flows and nested budgets"): a step's own, a fan-out's, a
    sub-flow's. None: no limit of that kind at this level (the run's ledger is
    ``PlanStatus.budget``)."""

    owner: str
    scope: Literal["step", "subflow"]
    calls_limit: int | None = None
    calls_spent: int = 0
    tokens_limit: int | None = None
    tokens_spent: int = 0
    usd_limit: float | None = None
    usd_spent: float = 0.0
    wall_limit_ms: int | None = None
    wall_spent_ms: int = 0


class PlanStatus(BaseModel):
    run_id: str
    plan: str
    state: RunState
    reason: str | None = None
    step: str | None = None
    steps: dict[str, str] = {}
    """Step id -> pending | running | settled | failed | skipped | waiting."""
    pending_gates: list[PendingGate] = []
    pending_pause: PendingPause | None = None
    budget: PlanBudgetStatus | None = None
    waivers: list[str] = []
    refused: list[str] = []
    error: str | None = None
    route: str | None = None
    simulated: bool = False
    waiting_since: str | None = None
    """When the open wait for a person began (ISO 8601, UTC); None while agents run."""
    issuances: list[Issuance] = []
    """Live consumer issuances, with their tokens (``awaiting_consumer``)."""
    checkpoints: list[str] = []
    """Committed checkpoint labels, in first-commit order."""
    resumed: list[str] = []
    """Steps restored from another run's checkpoint (``--from``) instead of run."""
    ledgers: list[LedgerStatus] = []
    """The nested ledgers, in plan order (steps, fan-outs and sub-flows with a ``budget``)."""
    capture_failures: list[CaptureFailure] = []
    """Training pairs not written (``training_pairs: true``); capture never fails a run."""
    deadline_decided: list[str] = []
    """Gates their deadline decided: a decision sent to one now is ``stale-gate-token``."""
