"""Input, result, control and query models of the ``PlanRun`` workflow and its activities.

Pure (pydantic only): the workflow, the workspace activities, the CLI and the tests import these.
Control input models are plain JSON so ``temporal workflow update execute --input '{...}'`` works:

- ``resume``:       ``{"args": {"approved_by": "ada"}}``
- ``resolve_gate``: ``{"step": "ship", "decision": "approve", "token": "<from status>"}``
  (and ``"by": "ada"``, who decided, optional)
- ``extend_budget``: ``{"calls": 12, "wall_ms": 600000, "tokens": 50000, "usd": 2.5}``
  (absolute new limits; any subset)

Fields are added only with defaults, so saved histories keep replaying.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, JsonValue

from workflows.bounds import (
    MAX_BUDGET_TOKENS,
    MAX_BUDGET_USD,
    MAX_CALLS,
    MAX_DECIDER_CHARS,
    MAX_WALL_MS,
    BudgetTokens,
    BudgetUsd,
    CallCount,
    Seed,
    WallMs,
)
from workflows.call_options import CallOptions
from workflows.inputs import StrictModel
from workflows.plan.consumer import Issuance
from workflows.sim_options import ModelSpec

__all__ = [
    "CaptureFailure",
    "CheckNotifiersInput",
    "ExtendPlanBudgetInput",
    "ExtendPlanBudgetResult",
    "FromCheckpoint",
    "GateDecisionResult",
    "LandedInput",
    "LedgerStatus",
    "NotifyGateInput",
    "PathsInput",
    "PendingGate",
    "PendingPause",
    "PlanBudgetOverride",
    "PlanBudgetStatus",
    "PlanEvent",
    "PlanFailureDetail",
    "PlanRunInput",
    "PlanRunResult",
    "PlanStatus",
    "ResolveGateInput",
    "ResumeInput",
    "ResumeResult",
    "RunState",
    "WriteSnapshot",
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


class PlanBudgetOverride(StrictModel):
    """Run limits that replace the plan's own (``--budget calls=N,wall_ms=M``)."""

    calls: int | None = Field(default=None, ge=1, le=MAX_CALLS)
    wall_ms: int | None = Field(default=None, ge=1, le=MAX_WALL_MS)
    tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)


class FromCheckpoint(StrictModel):
    """``--from RUN:LABEL``: a checkpoint in another run's ``checkpoints.json`` on the worker."""

    run_id: str = Field(max_length=200)
    label: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")


class PlanRunInput(StrictModel):
    """One plan run. ``plan`` is the document as parsed JSON (YAML is parsed by the client);
    the workflow validates it again, so ``temporal workflow start`` input is held to the same
    rules as ``ponder plan validate``."""

    plan: dict[str, JsonValue]
    run_id: str | None = Field(default=None, description="default: the workflow id")
    args: dict[str, JsonValue] = Field(
        default_factory=dict, description="run arguments: ${input.<key>} (--arg k=v)"
    )
    workspace: str | None = Field(
        default=None, description="the workspace root on the worker (the plan's own wins)"
    )
    budget: PlanBudgetOverride | None = None
    executors: dict[str, ModelSpec] = Field(
        default_factory=dict, description="family -> provider:model (--executor FAMILY=SPEC)"
    )
    default_family: str | None = Field(default=None, description="for steps without a model")
    coder_family: str | None = Field(
        default=None,
        description="the family that writes the code: a role: qe step in it is refused",
    )
    allow_same_family_qe: bool = False
    seed: Seed = 0
    calls: CallOptions = CallOptions()
    from_checkpoint: FromCheckpoint | None = Field(
        default=None,
        description="restore matching settled steps from another run's checkpoint (--from)",
    )


class PlanEvent(BaseModel):
    seq: int
    ts: str
    type: str
    data: dict[str, Any] = {}
    caused_by: list[int] = []


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
    """A nested ledger (plans-part2.md 6): a step's own, a fan-out's, a sub-flow's. None: no
    limit of that kind at this level (the run's ledger is ``PlanStatus.budget``)."""

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


class PlanFailureDetail(BaseModel):
    """The structured detail of a failed ``PlanRun`` (the ``ApplicationError``'s first detail;
    its type is the plan reason). ``cause``: the error type underneath the failed call or child
    (``provider.replay_miss``, ``provider.bad_request``, ...), None when none was."""

    cause: str | None = None

    @classmethod
    def of(cls, details: Sequence[Any]) -> PlanFailureDetail:
        """From a failure's details as they arrive (decoded to plain JSON); empty when absent
        (a run that failed before it opened, or one from before the detail existed)."""
        first = details[0] if details else None
        cause = first.get("cause") if isinstance(first, dict) else None
        return cls(cause=cause if isinstance(cause, str) else None)


class PlanRunResult(BaseModel):
    run_id: str
    status: Literal["completed"] = "completed"
    route: str | None = Field(default=None, description="the terminal route that ended the run")
    outputs: dict[str, JsonValue] = {}
    calls: int = Field(
        default=0, description="model calls, a tournament step's child calls included"
    )
    invocations: int = Field(default=0, description="step invocations (a tournament step is one)")
    usd: float = 0.0
    simulated: bool = False
    capture_failures: list[CaptureFailure] = []


class ResumeInput(StrictModel):
    args: dict[str, JsonValue]


class ResumeResult(BaseModel):
    accepted: list[str]
    args: dict[str, JsonValue]


class ResolveGateInput(StrictModel):
    step: str
    decision: str
    token: str
    by: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_DECIDER_CHARS,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="who decided (the CLI sends the local user name): the report's 'by'",
    )


class GateDecisionResult(BaseModel):
    step: str
    decision: str


class ExtendPlanBudgetInput(StrictModel):
    """New absolute limits (fields left None keep theirs): every limit that can pause a run."""

    calls: CallCount | None = None
    wall_ms: WallMs | None = None
    tokens: BudgetTokens | None = Field(default=None, description="input + output tokens")
    usd: BudgetUsd | None = None


class ExtendPlanBudgetResult(BaseModel):
    calls_limit: int
    wall_limit_ms: int
    summary: str
    tokens_limit: int | None = None
    usd_limit: float | None = None


# -- workspace activities ------------------------------------------------------------------


class PathsInput(BaseModel):
    workspace: str
    paths: list[str]
    field: str = Field(default="workspace", description="where the workspace came from (errors)")


class WriteSnapshot(BaseModel):
    """sha256 of each declared write before the executor ran (None: it did not exist)."""

    hashes: dict[str, str | None]


class LandedInput(BaseModel):
    workspace: str
    before: WriteSnapshot


# -- gate escalation activities --------------------------------------------------------------


class CheckNotifiersInput(BaseModel):
    """Preflight: the notifier names a plan's escalations use (``escalation-unroutable``)."""

    names: list[str]


class NotifyGateInput(BaseModel):
    """One escalation post. The body is exactly ``{run_id, step, deadline_at, command}``: no
    token (whoever reads the webhook must still ask the run, which checks who may decide)."""

    notifier: str
    run_id: str
    step: str
    deadline_at: str | None = None
    command: str
