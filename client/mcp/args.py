"""The MCP tools' arguments: each model's JSON Schema is its tool's input schema.

They are built from the workflow input models the CLI fills (``BudgetLimits``, ``Concurrency``,
``GivenCandidate``, ``ExtendBudgetInput``, the ``Style``/``Schedule`` literals), so a tool and
its CLI command refuse the same values with the same words.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from client.bundles import Format as ExportFormat
from client.profiles import SavedProfile
from client.run_states import KINDS, STATUSES
from client.tournament_options import MutateOptions, RankOptions, RunOptions, TournamentSettings
from workflows.ask_types import AskInput
from workflows.bounds import BudgetTokens, OutputTokens, Seed, WallMs
from workflows.inputs import StrictModel
from workflows.plan.run_types import PlanBudgetOverride
from workflows.tournament.profiles import BUILTIN_PROFILES
from workflows.tournament.types import (
    ExtendBudgetInput,
    GivenCandidate,
)

__all__ = [
    "AskArgs",
    "CampaignRunArgs",
    "CheckpointArgs",
    "ExportArgs",
    "ExtendArgs",
    "IssuanceArgs",
    "LedgerArgs",
    "ListRunsArgs",
    "MutateArgs",
    "NoArgs",
    "PlanArgs",
    "PlanRunArgs",
    "PlanValidateArgs",
    "ProfileArgs",
    "ProfileSaveArgs",
    "RankArgs",
    "ResolveGateArgs",
    "ResultArgs",
    "ResumeArgs",
    "RevertArgs",
    "RunArgs",
    "StepDoneArgs",
    "ThinkArgs",
    "TournamentArgs",
    "WaitArgs",
]

DEFAULT_WAIT_S = 600.0


class WaitArgs(StrictModel):
    wait: bool = Field(
        default=False,
        description="false: return the run id at once (the run goes on); true: wait for the "
        "outcome, with progress notifications, up to timeout_s",
    )
    timeout_s: float = Field(
        default=DEFAULT_WAIT_S, gt=0, le=3600, description="longest wait when wait is true"
    )


class LedgerArgs(StrictModel):
    ledger: str | None = Field(
        default=None,
        description="draw every paid call on the shared ledger NAME ([ledgers.NAME] in "
        "ponder.toml; its draw token is read for you, as ponder ... --ledger NAME does); the "
        "run waits while the ledger is spent",
    )


class TournamentArgs(RunOptions, TournamentSettings):
    """A tournament on a task: the think settings a saved profile also holds and what only a
    run takes (``client.tournament_options``: ``TournamentSettings``, ``RunOptions``, the
    same models ``ponder think``'s options are built from)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    task: str = Field(min_length=1, description="the task text")
    profile: str = Field(
        default="quick",
        description=f"built-in ({', '.join(BUILTIN_PROFILES)}) or a saved profile name",
    )


class ThinkArgs(WaitArgs, LedgerArgs, TournamentArgs):
    """``ponder think``: start a tournament."""


class PlanArgs(TournamentArgs):
    """``ponder think --dry-run``: the same arguments as think; nothing starts."""


# The options of rank and mutate are declared on client.tournament_options' RankOptions and
# MutateOptions, which ponder rank's and ponder mutate's options are built from.
class RankArgs(WaitArgs, LedgerArgs, RankOptions):
    """``ponder rank``: rank given candidate texts by pairwise judging."""

    task: str = Field(min_length=1)
    candidates: list[GivenCandidate] = Field(min_length=2, description="id and text of each")


class MutateArgs(WaitArgs, LedgerArgs, MutateOptions):
    """``ponder mutate``: improve one candidate from a critique."""

    task: str = Field(min_length=1)
    candidate: str
    critique: str


class AskArgs(WaitArgs, LedgerArgs):
    """``ponder ask``: one model call through Temporal."""

    question: str = Field(min_length=1)
    model: str = AskInput.model_fields["model"].default
    system: str | None = None
    temperature: float | None = None
    max_output_tokens: OutputTokens | None = None
    seed: Seed = 0
    run_id: str | None = None


class RunArgs(StrictModel):
    run_id: str = Field(description="the run id a tool or the CLI printed")


class ResultArgs(RunArgs, WaitArgs):
    pass


class ExtendArgs(ExtendBudgetInput, WaitArgs):
    """New absolute limits (fields left out keep theirs); a paused run continues. A plan run
    takes max_calls and wall_ms (within its cap), tokens (input + output together) and
    max_usd."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    run_id: str
    wall_ms: WallMs | None = Field(default=None, description="plan runs: wall-clock limit")
    tokens: BudgetTokens | None = Field(
        default=None, description="plan runs: token limit, input + output together"
    )


class ListRunsArgs(StrictModel):
    kind: str | None = Field(default=None, description=" | ".join(KINDS))
    status: str | None = Field(default=None, description=" | ".join(STATUSES))
    since: str | None = Field(default=None, description="30m, 2h, 7d, 1w or an ISO date")
    limit: int = Field(default=50, ge=1, le=500)
    cells: bool = Field(default=False, description="also list each campaign's cell runs")


class NoArgs(StrictModel):
    pass


class ProfileArgs(StrictModel):
    name: str = Field(max_length=64)


class ProfileSaveArgs(ProfileArgs):
    """``ponder profile save``: the settings as ``profile_show`` prints a saved profile."""

    settings: dict[str, JsonValue] = Field(
        default={},
        max_length=64,
        description=", ".join(
            info.alias or name for name, info in SavedProfile.model_fields.items()
        )
        + " (see profile_show); secret-shaped keys are refused",
    )
    force: bool = Field(default=False, description="replace a saved profile of the same name")


class ExportArgs(RunArgs):
    """``ponder export``: one run as a portable bundle, secrets redacted."""

    format: ExportFormat = Field(
        default="json", description="json: the bundle; jsonl: one record a line; markdown"
    )


class PlanValidateArgs(StrictModel):
    """``ponder plan validate``: check a plan document (YAML or JSON text)."""

    document: str = Field(min_length=1, description="the plan document's text")
    filename: str | None = Field(
        default=None, description="a name for messages; .json parses as JSON, else YAML"
    )


class PlanRunArgs(WaitArgs, LedgerArgs):
    """``ponder plan run``: run a plan document (the PlanRun workflow's own input fields)."""

    document: str = Field(min_length=1, description="the plan document's text (YAML or JSON)")
    filename: str | None = Field(default=None, description=".json parses as JSON, else YAML")
    args: dict[str, JsonValue] = Field(default={}, description="run arguments: ${input.KEY}")
    budget: PlanBudgetOverride | None = None
    workspace: str | None = Field(
        default=None,
        description="directory on the worker the plan's files live in (default: the plan's, "
        "else this server's cwd when the plan declares files); it must lie inside a root the "
        "worker declares ([plans] workspace_roots), else the run fails artifact-path-escapes-root",
    )
    executors: dict[str, str] = Field(
        default={}, description="family -> provider:model, over [executors] in ponder.toml"
    )
    default_family: str | None = Field(
        default=None, description="family of steps without a model (over [plans] default_family)"
    )
    coder_family: str | None = None
    allow_same_family_qe: bool = False
    seed: Seed = 0
    run_id: str | None = None
    from_checkpoint: str | None = Field(
        default=None,
        description="RUN:LABEL: restore the settled steps of another run's checkpoint whose "
        "fingerprint matches (ponder plan run --from)",
    )


class ResumeArgs(WaitArgs):
    """``ponder resume``: give a paused plan run the argument(s) it waits for."""

    run_id: str
    args: dict[str, JsonValue] = Field(min_length=1)


class ResolveGateArgs(WaitArgs):
    """``ponder gate``: decide a plan run's pending human gate (the token is read for you)."""

    run_id: str
    step: str
    decision: Literal["approve", "revise", "kill"]


class StepDoneArgs(WaitArgs):
    """``ponder step-done``: answer a consumer step's issuance (read it with ``issuance``)."""

    run_id: str
    step: str
    token: str | None = Field(
        default=None, description="the issuance's token (default: the step's only live one)"
    )
    output: JsonValue = Field(default=None, description="the step's output (text or JSON)")
    failure: str | None = Field(default=None, description="or: why the work failed")
    usage: dict[str, JsonValue] | None = Field(
        default=None, description="{tokens, usd, wall_ms}: what the work cost"
    )
    telemetry: JsonValue = Field(default=None, description="free-form, at most 64 KiB")


class IssuanceArgs(StrictModel):
    """The live issuances of a consumer step: the prompt as an executor gets it, its contract."""

    run_id: str
    step: str


class CheckpointArgs(StrictModel):
    """``ponder checkpoint``: commit a plan run's settled state under a label."""

    run_id: str
    label: str


class RevertArgs(WaitArgs):
    """``ponder revert``: go back to a checkpoint while the run waits."""

    run_id: str
    label: str


class CampaignRunArgs(WaitArgs, LedgerArgs):
    """``ponder campaign run``: variants x scenarios x seeds, ending in a decision."""

    document: str = Field(min_length=1, description="the ponder-campaign/1 document's text")
    filename: str | None = Field(default=None, description=".json parses as JSON, else YAML")
    run_id: str | None = None
