"""The ``ponder-plan/1`` model: one pydantic model for both document forms.

Pure (pydantic only). Closed world: unknown keys are refused, ``x-*`` vendor keys are kept on the
plan and on steps (the sim executor reads ``x-sim`` from a step), NaN and infinities are refused.
A ``loop-plan/1`` document is mapped onto this model by ``workflows.plan.loop_plan`` and records
where it came from in ``loop_plan`` (hidden from the published JSON Schema, refused in a
``ponder-plan/1`` document). The cross-field rules (references, deps, routes) live in
``workflows.plan.rules``; ``workflows.plan.validate`` runs both and reports every error.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    StringConstraints,
    Tag,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from workflows.bounds import MAX_BUDGET_TOKENS, MAX_BUDGET_USD, MAX_CALLS, MAX_WALL_MS
from workflows.plan.refs import ARG_KEY_PATTERN
from workflows.sim_options import check_model_spec
from workflows.tournament.profiles import Profile

__all__ = [
    "ENSURE_FORMS",
    "FAILURE_CLASSES",
    "FLOW_STEP_KINDS",
    "STEP_KINDS",
    "AgentStep",
    "Artifacts",
    "Ensure",
    "EnsureExpr",
    "EnsureFileContains",
    "EnsureFileExists",
    "EnsureJudged",
    "FanoutSpec",
    "FanoutStep",
    "Flow",
    "FlowHeader",
    "FlowStep",
    "GateEscalation",
    "GateStep",
    "HumanGate",
    "Iterate",
    "LedgerBudget",
    "LoopPlanOrigin",
    "PauseSpec",
    "PauseStep",
    "Plan",
    "PlanBudget",
    "PlanHeader",
    "Retry",
    "RunStep",
    "SetStep",
    "Step",
    "StepBudget",
    "TournamentSpec",
    "TournamentStep",
]

STEP_ID_PATTERN = r"^[a-z0-9_.:-]{1,64}$"
StepId = Annotated[str, StringConstraints(pattern=STEP_ID_PATTERN)]
ArgKey = Annotated[str, StringConstraints(pattern=ARG_KEY_PATTERN)]
# `provider:model`, or a bare family name (`sonnet`, `codex`) resolved by the executors.
ModelSpec = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(:[^\s:][^\s]{0,199})?$"),
    AfterValidator(check_model_spec),  # sim: options within their ceilings
]
Family = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
Label = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]
OneLine = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f]{1,200}$")]
Prompt = Annotated[str, StringConstraints(min_length=1, max_length=200_000)]
# A contract maps field names to types: string | number | integer | boolean | object | array |
# any | <contract name>, with `[]` suffixes for lists and a trailing `?` for optional fields.
ContractName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
TypeExpr = Annotated[str, StringConstraints(min_length=1, max_length=100)]
FailureClass = Literal[
    "timeout", "transport", "malformed-output", "policy-refusal", "ensure-failed"
]
FAILURE_CLASSES: tuple[str, ...] = (
    "timeout",
    "transport",
    "malformed-output",
    "policy-refusal",
    "ensure-failed",
)
STEP_KINDS: tuple[str, ...] = ("agent", "gate", "fanout", "pause", "tournament", "run", "set")
FLOW_STEP_KINDS: tuple[str, ...] = ("agent", "gate", "set")
"""What a sub-flow body takes (model and human gates; pauses stay top-level; no recursion)."""
FLOW_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
FlowName = Annotated[str, StringConstraints(pattern=FLOW_NAME_PATTERN)]
# A CEL expression (docs/plans.md, "Expressions, ensure, iterate and set"). Its bounds (2,000
# characters, 400 nodes, ...) are checked by workflows.plan.expressions with the expr.* codes, so
# only the schema shows the length; a too-long text is expr.too_complex, not a generic range error.
Cel = Annotated[str, Field(min_length=1, json_schema_extra={"maxLength": 2000})]
SetKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]
MAX_ENSURES = 20
MAX_STEPS = 10_000
MAX_PLAN_CONCURRENCY = 256
# Who executes an agent step: the engine (a provider call), or an external client that answers
# the step's issuance with the step_done update (docs/plans.md, "Consumer steps").
Dispatch = Literal["engine", "consumer"]
CHECKPOINT_DOC = "commit a checkpoint with this label when the step succeeds (top level only)"
WHEN_DOC = (
    "CEL over input and steps: false skips the step, and the steps that depend on it (not on a "
    "fan-out's chain member)"
)
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000
MIN_DEADLINE_MS = 1000
MAX_DEADLINE_MS = 90 * 24 * 3600 * 1000
"""A human gate's ``deadline`` and ``escalate.after_ms``: 1 s to 90 days (``gate.deadline``)."""
DEFAULT_DECISIONS: tuple[str, ...] = ("approve", "kill")
"""What a deadline may decide: not ``revise``, which would loop work nobody asked for."""
# A notifier is declared by the worker (`[notifiers.NAME]` in ponder.toml); a plan names it.
NotifierName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]
_DEADLINE_RANGE: dict[str, JsonValue] = {"minimum": MIN_DEADLINE_MS, "maximum": MAX_DEADLINE_MS}

# strict: a closed-world document says what it means ("yes" is not a boolean, "3" not a number).
_CONFIG = ConfigDict(
    strict=True,
    extra="forbid",
    allow_inf_nan=False,
    validate_by_alias=True,
    validate_by_name=False,
    serialize_by_alias=True,
)


class _Strict(BaseModel):
    model_config = _CONFIG


def _vendor_schema(schema: dict[str, Any]) -> None:
    schema["additionalProperties"] = False
    schema["patternProperties"] = {"^x-": {}}


class _Vendor(BaseModel):
    """Closed world plus ``x-*`` keys (kept, so a round trip through JSON loses nothing)."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        allow_inf_nan=False,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        json_schema_extra=_vendor_schema,
    )
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    @model_validator(mode="after")
    def _only_vendor_extras(self) -> _Vendor:
        for key, value in (self.__pydantic_extra__ or {}).items():
            if not key.startswith("x-"):
                raise ValueError(f"unknown field {key!r} (only x-* vendor keys are free-form)")
            if not _finite(value):
                raise ValueError(f"{key}: NaN and infinities are not allowed")
        return self

    def vendor(self, key: str) -> Any:
        return (self.__pydantic_extra__ or {}).get(key)


def _unset(value: object) -> bool:
    # Dumped only when set: a plan without ``when`` dumps (and so fingerprints) as before.
    return value is None


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


class Retry(_Strict):
    """Immediate retries of one invocation, only for the failure classes listed in ``on``."""

    max_attempts: int = Field(default=1, ge=1, le=20)
    on: list[FailureClass] = Field(default_factory=list, max_length=5)


class Artifacts(_Strict):
    """Workspace-relative paths the step reads and writes (checked for containment)."""

    reads: list[str] = Field(default_factory=list, max_length=200)
    writes: list[str] = Field(default_factory=list, max_length=200)


class LedgerBudget(_Strict):
    """A nested ledger's limits (docs/plans.md, "Sub-flows and nested budgets"): a step's own, a
    fan-out's (all items), a ``run`` step's (its sub-flow). Unset: no limit of that kind at this
    level. The ceilings are the run ledger's (``PlanBudget``): no nested ledger may hold more than a
    run can."""

    calls: int | None = Field(default=None, ge=1, le=MAX_CALLS)
    tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)
    wall_ms: int | None = Field(default=None, ge=1, le=MAX_WALL_MS)

    def is_set(self) -> bool:
        return any(v is not None for v in (self.calls, self.tokens, self.usd, self.wall_ms))


class StepBudget(LedgerBudget):
    max_agents: int | None = Field(
        default=None, ge=1, le=1000, description="invocations one occurrence may spend (retries)"
    )


class EnsureExpr(_Strict):
    expr: Cel = Field(description="CEL; holds iff it evaluates to true")


class EnsureFileExists(_Strict):
    file_exists: str = Field(
        min_length=1, max_length=4096, description="a workspace-relative path (may hold ${...})"
    )


class FileContains(_Strict):
    path: str = Field(min_length=1, max_length=4096, description="may hold ${...}")
    text: str = Field(min_length=1, max_length=10_000, description="UTF-8 text the file holds")


class EnsureFileContains(_Strict):
    file_contains: FileContains


class Judged(_Strict):
    statement: str = Field(min_length=1, max_length=2000)
    model: ModelSpec | None = Field(default=None, description="default: the step's model")
    stakes: OneLine | None = None


class EnsureJudged(_Strict):
    judged: Judged


ENSURE_FORMS: tuple[str, ...] = ("expr", "file_exists", "file_contains", "judged")


def _ensure_form(value: Any) -> str | None:
    """Which form an ensure entry is (its one key); shape reports entries with no single form
    as ``ensure.form`` before the model sees them."""
    if isinstance(value, BaseModel):
        return next(iter(type(value).model_fields))
    if isinstance(value, dict):
        forms = [k for k in value if k in ENSURE_FORMS]
        return forms[0] if len(forms) == 1 else None
    return None


Ensure = Annotated[
    Annotated[EnsureExpr, Tag("expr")]
    | Annotated[EnsureFileExists, Tag("file_exists")]
    | Annotated[EnsureFileContains, Tag("file_contains")]
    | Annotated[EnsureJudged, Tag("judged")],
    Discriminator(_ensure_form),
]


class Iterate(_Strict):
    """Re-run the step until ``until`` holds (each iteration with its own retries)."""

    max: int = Field(ge=1, le=100, description="iterations at most")
    until: Cel


def judged_count(ensure: list[Ensure]) -> int:
    return sum(1 for e in ensure if isinstance(e, EnsureJudged))


class _Invocation(_Vendor):
    """What an agent step and a model gate share: one model invocation with its contract."""

    id: StepId
    deps: list[StepId] = Field(default_factory=list, max_length=1000)
    title: str | None = Field(default=None, max_length=500)
    prompt: Prompt
    model: ModelSpec | None = None
    family: Family | None = None
    timeout_ms: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_MS)
    tools: list[OneLine] = Field(default_factory=list, max_length=100)
    artifacts: Artifacts = Field(default_factory=Artifacts)
    retry: Retry = Field(default_factory=Retry)
    idempotent: bool = False
    budget: StepBudget = Field(default_factory=StepBudget)
    role: Literal["qe"] | None = None
    dispatch: Dispatch = "engine"
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)

    def attempts(self) -> int:
        """Worst-case invocations of one occurrence: ``max(1, min(max_agents, max_attempts))``
        (max_agents defaults to max_attempts, so an unset allowance never cuts retries)."""
        agents = self.budget.max_agents or self.retry.max_attempts
        return max(1, min(agents, self.retry.max_attempts))


class AgentStep(_Invocation):
    kind: Literal["agent"]
    deliverable: Literal["return-value", "file"] = "return-value"
    out: ContractName | None = None
    on_fail: StepId | None = None
    ensure: list[Ensure] = Field(default_factory=list, max_length=MAX_ENSURES)
    iterate: Iterate | None = None

    def iterations(self) -> int:
        return self.iterate.max if self.iterate is not None else 1

    def judged(self) -> int:
        """Judge calls one attempt may make (one per ``judged`` predicate)."""
        return judged_count(self.ensure)


class GateEscalation(_Strict):
    """``after_ms`` into the wait, nobody having decided: ``gate.escalated``, flagged in status,
    and (with ``notify``) a post to the worker's notifier of that name."""

    # Ranges are the rules' (code gate.deadline); the schema states them for editors.
    after_ms: int = Field(json_schema_extra=_DEADLINE_RANGE)
    notify: NotifierName | None = Field(
        default=None, description="a notifier the worker declares ([notifiers.NAME])"
    )


class HumanGate(_Strict):
    """Targets are step ids; null: approve continues, kill fails the run (gate-killed).

    ``deadline`` (ms after the wait opens) applies ``default`` as a person's decision would;
    a ``kill`` default with ``on_kill: null`` fails the run ``gate-deadline-expired``."""

    on_approve: StepId | None = None
    on_revise: StepId | None = None
    on_kill: StepId | None = None
    max_rounds: int | None = Field(default=None, ge=1, le=100)
    deadline: int | None = Field(
        default=None,
        description="ms after the wait opens; then `default` decides",
        json_schema_extra=_DEADLINE_RANGE,
    )
    default: str | None = Field(
        default=None,
        max_length=16,
        description="the deadline's decision (required with deadline)",
        json_schema_extra={"enum": [*DEFAULT_DECISIONS, None]},
    )
    escalate: GateEscalation | None = None


class GateStep(_Invocation):
    """A model gate (``prompt``: its own output carries ``GATE: PASS|FAIL``) or a human gate
    (``gate: {...}``: the run waits for a decision). ``rules`` refuses both or neither."""

    kind: Literal["gate"]
    prompt: Prompt | None = None  # type: ignore[assignment]  # a human gate has none
    fail_route: str | None = Field(
        default=None, max_length=80, description="an earlier agent step id, or terminal:<label>"
    )
    max_redos: int = Field(default=0, ge=0, le=100)
    gate: HumanGate | None = None
    dispatch: Dispatch = Field(default="engine", description="consumer is refused on a gate")
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)

    def is_human(self) -> bool:
        return self.gate is not None

    def attempts(self) -> int:
        return 0 if self.is_human() else super().attempts()  # a person decides: no model call


class FanoutSpec(_Strict):
    over: list[JsonValue] | str = Field(
        description="the items (a list), or one ${...} reference to an array output"
    )
    chain: list[StepId] = Field(min_length=1, max_length=50)
    max_fanout: int | None = Field(
        default=None, ge=1, le=10_000, description="activation cap: only the first N items run"
    )
    concurrency: int | None = Field(default=None, ge=1, le=10_000)
    join: str = Field(default="all", pattern=r"^(all|any|quorum:[1-9][0-9]{0,4})$")
    dedup: bool = False
    isolation: Literal["none", "worktree"] = Field(
        default="none",
        description="worktree: each item's chain runs in its own git worktree at a snapshot of "
        "the workspace; the succeeded items' patches merge in item order and land once",
    )


class FanoutStep(_Vendor):
    kind: Literal["fanout"]
    id: StepId
    deps: list[StepId] = Field(default_factory=list, max_length=1000)
    title: str | None = Field(default=None, max_length=500)
    fanout: FanoutSpec
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)
    budget: LedgerBudget = Field(
        default_factory=LedgerBudget, description="the region's ledger: every item's calls"
    )


class PauseSpec(_Strict):
    state: Label
    resume_arg: ArgKey
    json_schema: dict[str, JsonValue] | None = Field(
        default=None,
        alias="schema",
        description="a JSON Schema: the value is parsed as JSON and validated; else a string",
    )


class PauseStep(_Vendor):
    kind: Literal["pause"]
    id: StepId
    deps: list[StepId] = Field(default_factory=list, max_length=1000)
    title: str | None = Field(default=None, max_length=500)
    pause: PauseSpec
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)


class TournamentSpec(_Strict):
    profile: str = Field(default="quick", max_length=64)
    custom: Profile | None = Field(
        default=None, description="n, k, t, m, lambda, temperatures; beats profile"
    )
    rubric: str | None = Field(default=None, max_length=20_000)
    judge_model: ModelSpec | None = None
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    max_calls: int | None = Field(default=None, ge=1, le=1_000_000)


class TournamentStep(_Vendor):
    """A child ``Tournament`` over ``prompt`` (the task); its winner is the step's output."""

    kind: Literal["tournament"]
    id: StepId
    deps: list[StepId] = Field(default_factory=list, max_length=1000)
    title: str | None = Field(default=None, max_length=500)
    prompt: Prompt
    model: ModelSpec | None = None
    timeout_ms: int | None = Field(default=None, ge=1, le=MAX_TIMEOUT_MS)
    tournament: TournamentSpec = Field(default_factory=TournamentSpec)
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)


class RunStep(_Vendor):
    """A sub-flow call: the body of ``flows[flow]`` walks inline, each child a boundary of its
    own (scoped ``<id>/<child>``); the body's output is this step's output."""

    kind: Literal["run"]
    id: StepId
    deps: list[StepId] = Field(default_factory=list, max_length=1000)
    title: str | None = Field(default=None, max_length=500)
    flow: FlowName
    with_: dict[ArgKey, JsonValue] = Field(
        default_factory=dict,
        alias="with",
        description="the flow's ${input.*}: templates over the caller's scope (exactly one "
        "${...} passes the value typed)",
    )
    budget: LedgerBudget = Field(
        default_factory=LedgerBudget, description="the sub-flow's ledger: every child's calls"
    )
    out: ContractName | None = None
    ensure: list[Ensure] = Field(
        default_factory=list,
        max_length=MAX_ENSURES,
        description="checked on the flow's output (result), after out; never retried",
    )
    on_fail: StepId | None = None
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)


class SetStep(_Vendor):
    """Computed values: each key's CEL over ``input`` and ``steps``; the map is the output.
    Deterministic, so never retried and never dispatched."""

    kind: Literal["set"]
    id: StepId
    deps: list[StepId] = Field(default_factory=list, max_length=1000)
    title: str | None = Field(default=None, max_length=500)
    values: dict[SetKey, Cel] = Field(alias="set", min_length=1, max_length=64)
    out: ContractName | None = None
    ensure: list[Ensure] = Field(default_factory=list, max_length=MAX_ENSURES)
    checkpoint: Label | None = Field(default=None, description=CHECKPOINT_DOC)
    when: Cel | None = Field(default=None, description=WHEN_DOC, exclude_if=_unset)


Step = Annotated[
    AgentStep | GateStep | FanoutStep | PauseStep | TournamentStep | RunStep | SetStep,
    Field(discriminator="kind"),
]
STEP_MODELS: dict[str, type[BaseModel]] = {
    "agent": AgentStep,
    "gate": GateStep,
    "fanout": FanoutStep,
    "pause": PauseStep,
    "tournament": TournamentStep,
    "run": RunStep,
    "set": SetStep,
}
FlowStep = Annotated[AgentStep | GateStep | SetStep, Field(discriminator="kind")]
MAX_FLOWS = 100
MAX_FLOW_STEPS = 1000


class FlowHeader(_Vendor):
    """A flow without its body (validated on its own so body errors do not hide these)."""

    description: str | None = Field(default=None, max_length=20_000)
    input: ContractName | dict[ContractName, TypeExpr] | None = Field(
        default=None,
        description="the contract `with` must meet: a contract name, or field -> type inline",
    )
    output: str | None = Field(
        default=None,
        max_length=300,
        description="one ${steps.<id>.output[.path]} of the body (default: the last step's)",
    )


class Flow(FlowHeader):
    """A named sub-flow, walked inline by each ``run`` step that calls it."""

    steps: list[FlowStep] = Field(min_length=1, max_length=MAX_FLOW_STEPS)


class PlanBudget(_Strict):
    """Run limits; unset calls and wall_ms default to the plan's computed reservations."""

    calls: int | None = Field(default=None, ge=1, le=MAX_CALLS)
    tokens: int | None = Field(default=None, ge=1, le=MAX_BUDGET_TOKENS)
    usd: float | None = Field(default=None, gt=0, le=MAX_BUDGET_USD)
    wall_ms: int | None = Field(default=None, ge=1, le=MAX_WALL_MS)


class LoopPlanOrigin(_Strict):
    """Set only when the plan was mapped from a ``loop-plan/1`` document."""

    trace_emit: bool = False
    when_to_use: str | None = None


class PlanHeader(_Vendor):
    """The plan without its steps (validated on its own so step errors do not hide these)."""

    schema_: Literal["ponder-plan/1"] = Field(alias="schema")
    name: OneLine
    description: str | None = Field(default=None, max_length=20_000)
    budget: PlanBudget | None = None
    workspace: str | None = Field(
        default=None, max_length=4096, description="default: --workspace, else the cwd"
    )
    contracts: dict[ContractName, dict[ContractName, TypeExpr]] = Field(default_factory=dict)
    max_rounds: int | None = Field(
        default=None, ge=1, le=100, description="human-gate revise rounds"
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=MAX_PLAN_CONCURRENCY,
        description="top-level agent, set and run steps in flight at once, each once what it "
        "reads has settled (default 1: one step at a time, in plan order)",
        exclude_if=_unset,
    )
    training_pairs: bool = Field(
        default=False,
        description="capture each settled agent step's prompt and output as a training pair "
        "(ponder-trainpair/1) in the worker's training_dir",
    )
    loop_plan: SkipJsonSchema[LoopPlanOrigin | None] = None


class Plan(PlanHeader):
    """A ``ponder-plan/1`` plan (or a ``loop-plan/1`` one mapped onto it)."""

    steps: list[Step] = Field(min_length=1, max_length=MAX_STEPS)
    flows: dict[FlowName, Flow] = Field(default_factory=dict, max_length=MAX_FLOWS)

    def step(
        self, step_id: str
    ) -> AgentStep | GateStep | FanoutStep | PauseStep | TournamentStep | RunStep | SetStep:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)
