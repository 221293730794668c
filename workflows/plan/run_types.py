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
from workflows.plan.status import (
    CaptureFailure,
    LedgerStatus,
    PendingGate,
    PendingPause,
    PlanBudgetStatus,
    PlanStatus,
    RunState,
)
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
