"""The ``ponder-campaign/1`` document: variants x scenarios x seeds, closed-world.

Pure (pydantic, PyYAML through the plan parser; no Temporal, httpx or activities import, not even
transitively). :func:`validate_text` and :func:`validate_value` report every problem with a code,
a path and a message; the ``Campaign`` workflow decodes the same model from its raw input and
runs :func:`semantic_errors` in its preflight, so a document ``ponder campaign validate`` accepts
is one the workflow accepts.

A variant's ``config`` is kept as a JSON object here: a tournament config is checked against the
tournament's input model by ``workflows/campaign/configs.py`` (that model imports activity
types, which this module must not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args

from pydantic import ConfigDict, Field, ValidationError, field_validator

from workflows.bounds import OutputTokens, Temperature
from workflows.budget import BudgetLimits
from workflows.call_options import CallOptions
from workflows.campaign.errors import CampaignError
from workflows.inputs import StrictModel
from workflows.patterns import pattern_problem
from workflows.plan.document import parse_text
from workflows.plan.errors import join_path
from workflows.plan.validate import validate_document as validate_plan
from workflows.sim_options import ModelSpec
from workflows.tournament.prompts import Style

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT_S",
    "DEFAULT_MIN_PAIRS",
    "DEFAULT_ROPE",
    "MAX_ANALYSIS_SEED",
    "MAX_CELLS",
    "MAX_DRAIN_TIMEOUT_S",
    "MAX_JUDGE_SCALE",
    "SCHEMA",
    "CampaignDocument",
    "CommandScorer",
    "ExactScorer",
    "JudgeScorer",
    "NumericScorer",
    "PlanConfig",
    "RegexScorer",
    "Route",
    "Scenario",
    "Scorer",
    "SimTruthScorer",
    "SingleConfig",
    "Validation",
    "Variant",
    "semantic_errors",
    "shape_errors",
    "validate_text",
    "validate_value",
]

SCHEMA = "ponder-campaign/1"
DEFAULT_MIN_PAIRS = 20
MAX_MIN_PAIRS = 1_000_000
MAX_ANALYSIS_SEED = 2**63 - 1
MAX_JUDGE_SCALE = 1000.0
DEFAULT_ROPE = 0.02
# A cell costs ~20 history events (child start/close, capture check, scoring): 1,000 cells stay
# well under half of Temporal's 50,000-event limit without continue-as-new.
MAX_CELLS = 1_000
DEFAULT_DRAIN_TIMEOUT_S = 30.0
MAX_DRAIN_TIMEOUT_S = 600.0
"""How long a stopping campaign (cancelled, or stopped by a genuine error) waits for its running
cells to drain their in-flight calls; a cell still draining then is recorded ``unsettled``."""
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# What the campaign sets on each tournament cell itself; a config that sets them is refused.
TOURNAMENT_OWNED = (
    "task", "seed", "run_id", "budget", "candidates", "on_budget_exhausted", "calls",
)  # fmt: skip


class ExactScorer(StrictModel):
    kind: Literal["exact"]
    expected: str
    normalize: bool = Field(default=True, description="trim, casefold, collapse whitespace")


class NumericScorer(StrictModel):
    kind: Literal["numeric"]
    expected: float
    tolerance: float = Field(default=1e-6, ge=0)
    relative: bool = Field(default=False, description="tolerance as a share of |expected|")


class RegexScorer(StrictModel):
    """Passes (1.0) when ``pattern`` matches anywhere in the answer, on RE2 (linear time)."""

    kind: Literal["regex"]
    pattern: str = Field(min_length=1)


class CommandScorer(StrictModel):
    """A command the *worker* declares (``[providers.NAME]`` of the command kind), named here.

    The answer goes to stdin in a fresh temp dir with an explicit environment; exit 0 passes
    (1.0) unless the last line of stdout is a number, which is then the score.
    """

    kind: Literal["command"]  # a scorer kind
    name: str = Field(pattern=ID_PATTERN)
    argv: list[str] | None = Field(default=None, description="refused: see the trust boundary")


class JudgeScorer(StrictModel):
    """A judge model grades the answer against the rubric on ``[0, scale]``; the score is the
    grade divided by the scale, and a grade outside the scale fails the cell's scoring."""

    kind: Literal["judge"]
    model: ModelSpec = Field(min_length=1)
    rubric: str = Field(min_length=1)
    scale: float = Field(
        default=1.0,
        gt=0,
        le=MAX_JUDGE_SCALE,
        description="the top of the judge's grade (1, 10, 100...); the prompt asks for it",
    )


class SimTruthScorer(StrictModel):
    """The simulated provider's hidden quality of the answer (sim variants only)."""

    kind: Literal["sim_truth"]


Scorer = Annotated[
    ExactScorer | NumericScorer | RegexScorer | CommandScorer | JudgeScorer | SimTruthScorer,
    Field(discriminator="kind"),
]


class SingleConfig(StrictModel):
    """One model call; its text is the answer."""

    model: ModelSpec = Field(min_length=1)
    prompt_style: Style | None = None
    system: str | None = None
    temperature: Temperature | None = None
    max_output_tokens: OutputTokens | None = None
    base_url: str | None = None


class PlanConfig(StrictModel):
    """A plan run per cell; its last step's output is the answer. The scenario's task is the
    run argument ``task`` (``${input.task}``) unless ``args`` sets it."""

    plan: dict[str, Any] | str = Field(
        description="the ponder-plan/1 document inline; a path is read by the CLI (relative to "
        "the campaign file) and inlined before the campaign starts"
    )
    args: dict[str, Any] = Field(default_factory=dict)


class Variant(StrictModel):
    id: str = Field(pattern=ID_PATTERN)
    kind: Literal["tournament", "plan", "single"]
    config: dict[str, Any] = Field(default_factory=dict)


class Scenario(StrictModel):
    id: str = Field(pattern=ID_PATTERN)
    task: str = Field(min_length=1)
    scorer: Scorer
    tags: dict[str, str] = Field(default_factory=dict)


class Route(StrictModel):
    """What every HTTP provider a variant uses must satisfy (checked before any cell runs)."""

    allow: list[str] = Field(default=[], description="base URL prefixes or re:<regex> (RE2)")
    block: list[str] = Field(default=[], description="base URL prefixes or re:<regex>; wins")
    provider: str | None = Field(default=None, description="the provider kind expected")
    require_explicit_base_url: bool = True
    require_auth: bool = True


class CampaignDocument(StrictModel):
    """Untrusted: decoded inside the workflow; unknown fields refused everywhere."""

    schema_: Literal["ponder-campaign/1"] = Field(alias="schema")
    campaign_id: str = Field(pattern=ID_PATTERN)
    variants: list[Variant] = Field(min_length=1)
    scenarios: list[Scenario] = Field(min_length=1)
    seeds: list[Annotated[int, Field(ge=0, le=2**31 - 1)]] = Field(default=[0, 1, 2], min_length=1)
    split: Literal["search", "dev", "holdout"] = "holdout"
    comparator: str | None = Field(default=None, description="a variant id; default the first")
    concurrency: int = Field(default=4, ge=1, le=256)
    integrity: Literal["throw", "mark_failed", "log"] = "mark_failed"
    route: Route = Route()
    preregistration_hash: str | None = None
    commit_sha: str | None = None
    min_pairs: int = Field(default=DEFAULT_MIN_PAIRS, ge=1, le=MAX_MIN_PAIRS)
    rope: float = Field(default=DEFAULT_ROPE, ge=0)
    analysis_seed: int | None = Field(
        default=None,
        ge=0,
        le=MAX_ANALYSIS_SEED,
        description="the seed of the report's bootstrap resamples, each variant's stream derived "
        "from it and the variant id (default: a fixed seed)",
    )
    budget: BudgetLimits = BudgetLimits()
    drain_timeout_s: float = Field(
        default=DEFAULT_DRAIN_TIMEOUT_S,
        gt=0,
        le=MAX_DRAIN_TIMEOUT_S,
        description="once stopping, how long running cells may take to settle their calls",
    )
    calls: CallOptions = Field(
        default_factory=CallOptions, description="scheduling of every model call of every cell"
    )

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)

    @field_validator("commit_sha")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        return value.strip() if value is not None else None

    @property
    def comparator_id(self) -> str:
        return self.comparator or self.variants[0].id

    def variant(self, variant_id: str) -> Variant:
        return next(v for v in self.variants if v.id == variant_id)

    def scenario(self, scenario_id: str) -> Scenario:
        return next(s for s in self.scenarios if s.id == scenario_id)


@dataclass
class Validation:
    document: CampaignDocument | None
    errors: list[CampaignError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.document is not None and not self.errors


def validate_text(text: str, *, filename: str | None = None) -> Validation:
    """Parse JSON or YAML text and validate it; every error found, each with its path."""
    value, problems = parse_text(text, filename=filename)
    errors = [CampaignError(p.code, p.path, p.message) for p in problems]
    if errors:
        return Validation(None, errors)
    return validate_value(value)


def validate_value(value: Any) -> Validation:
    """Validate an already parsed JSON value (shape first, then the cross-field rules)."""
    if not isinstance(value, dict):
        return Validation(
            None, [CampaignError("document.not_object", "", "the document must be a mapping")]
        )
    if value.get("schema") != SCHEMA:
        return Validation(
            None,
            [
                CampaignError(
                    "schema.unknown",
                    "schema",
                    f"schema is {value.get('schema')!r}; fix: set schema: {SCHEMA}",
                )
            ],
        )
    try:
        document = CampaignDocument.model_validate(value)
    except ValidationError as exc:
        return Validation(None, shape_errors(exc))
    return Validation(document, semantic_errors(document))


def semantic_errors(doc: CampaignDocument) -> list[CampaignError]:
    """The rules one field cannot say, in preflight order (route checks need the
    worker's configuration and run in the workflow's route activity)."""
    errors: list[CampaignError] = []
    _duplicates(errors, "variants", [v.id for v in doc.variants], "variant.duplicate")
    _duplicates(errors, "scenarios", [s.id for s in doc.scenarios], "scenario.duplicate")
    for i, seed in enumerate(doc.seeds):
        if seed in doc.seeds[:i]:
            errors.append(
                CampaignError("seed.duplicate", f"seeds[{i}]", f"seed {seed} is listed twice")
            )
    if doc.comparator is not None and doc.comparator not in {v.id for v in doc.variants}:
        known = ", ".join(v.id for v in doc.variants)
        errors.append(
            CampaignError(
                "comparator.unknown",
                "comparator",
                f"comparator {doc.comparator!r} is not a variant id; fix: use one of {known}",
            )
        )
    if not doc.commit_sha:
        errors.append(
            CampaignError(
                "commit_sha.missing",
                "commit_sha",
                "commit_sha is required; fix: set it to the git sha under test "
                "(e.g. the output of `git rev-parse HEAD`)",
            )
        )
    for i, variant in enumerate(doc.variants):
        errors += _variant_errors(variant, join_path("variants", i))
    for i, scenario in enumerate(doc.scenarios):
        errors += _scorer_errors(scenario, join_path("scenarios", i, "scorer"))
    errors += _route_errors(doc.route)
    cells = len(doc.variants) * len(doc.scenarios) * len(doc.seeds)
    if cells > MAX_CELLS:
        errors.append(
            CampaignError(
                "campaign.too_large",
                "",
                f"{cells} cells (variants x scenarios x seeds) is over {MAX_CELLS}; "
                "fix: split the campaign",
            )
        )
    return errors


def _duplicates(errors: list[CampaignError], base: str, ids: list[str], code: str) -> None:
    for i, item in enumerate(ids):
        if item in ids[:i]:
            errors.append(
                CampaignError(code, join_path(base, i, "id"), f"id {item!r} is used twice")
            )


def _variant_errors(variant: Variant, path: str) -> list[CampaignError]:
    config_path = join_path(path, "config")
    if variant.kind == "plan":
        return _plan_errors(variant, config_path)
    if variant.kind == "single":
        try:
            SingleConfig.model_validate(variant.config)
        except ValidationError as exc:
            return shape_errors(exc, config_path)
        return []
    return [
        CampaignError(
            "field.not_allowed",
            join_path(config_path, key),
            f"the campaign sets {key} for every cell; fix: remove it"
            + (" (the campaign's budget is shared by all cells)" if key == "budget" else ""),
        )
        for key in TOURNAMENT_OWNED
        if key in variant.config
    ]


def _plan_errors(variant: Variant, config_path: str) -> list[CampaignError]:
    try:
        config = PlanConfig.model_validate(variant.config)
    except ValidationError as exc:
        return shape_errors(exc, config_path)
    plan_path = join_path(config_path, "plan")
    if isinstance(config.plan, str):
        return [
            CampaignError(
                "variant.config",
                plan_path,
                f"plan {config.plan!r} is a path: the worker never reads files named by a "
                "campaign; fix: run it with `ponder campaign run` (which inlines the file) or "
                "give the plan document inline",
            )
        ]
    result = validate_plan(config.plan)
    return [
        CampaignError("variant.config", f"{plan_path}.{e.path}" if e.path else plan_path, e.line())
        for e in result.errors
    ]


def _scorer_errors(scenario: Scenario, path: str) -> list[CampaignError]:
    scorer = scenario.scorer
    if isinstance(scorer, CommandScorer) and scorer.argv is not None:
        return [
            CampaignError(
                "scorer.argv_not_allowed",
                join_path(path, "argv"),
                "a campaign cannot give a command line (whoever starts a campaign must not get a "
                "shell on the worker); fix: declare [providers.NAME] of the command kind with its "
                "argv in the worker's ponder.toml and give name: NAME",
            )
        ]
    if isinstance(scorer, RegexScorer):
        problem = pattern_problem(scorer.pattern)
        if problem is not None:
            return [CampaignError("scorer.pattern", join_path(path, "pattern"), problem)]
    return []


def _route_errors(route: Route) -> list[CampaignError]:
    """Each ``re:`` rule compiles with RE2 here, so none is first compiled when a base URL is
    checked against it."""
    errors = []
    for name in ("allow", "block"):
        for i, rule in enumerate(getattr(route, name)):
            problem = pattern_problem(rule[3:]) if rule.startswith("re:") else None
            if problem is not None:
                errors.append(CampaignError("route.pattern", join_path("route", name, i), problem))
    return errors


_CODE_OF_TYPE = {
    "missing": "field.missing",
    "extra_forbidden": "field.unknown",
    "finite_number": "value.not_finite",
    "literal_error": "field.choice",
    "union_tag_invalid": "field.choice",
    "union_tag_not_found": "field.missing",
    "string_pattern_mismatch": "field.pattern",
}


def _code(kind: str) -> str:
    if kind in _CODE_OF_TYPE:
        return _CODE_OF_TYPE[kind]
    if kind.startswith(("greater_than", "less_than", "too_", "string_too_")):
        return "field.range"
    if kind.endswith(("_type", "_parsing")):
        return "field.type"
    return "field.invalid"


def shape_errors(exc: ValidationError, base: str = "") -> list[CampaignError]:
    out = []
    for error in exc.errors(include_url=False):
        # Drop the discriminator tags pydantic puts in the location (``exact``, ``command``...).
        loc = [p for p in error["loc"] if not (isinstance(p, str) and p in _SCORER_TAGS)]
        code = _code(error["type"])
        shown = "" if code in ("field.missing", "field.unknown") else f" (got {error['input']!r})"
        out.append(CampaignError(code, join_path(base, *loc), f"{error['msg']}{shown}"[:300]))
    return out


_SCORER_TAGS = {
    get_args(model.model_fields["kind"].annotation)[0]
    for model in (
        ExactScorer, NumericScorer, RegexScorer, CommandScorer, JudgeScorer, SimTruthScorer
    )
}  # fmt: skip
