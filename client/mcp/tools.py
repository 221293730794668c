"""The MCP tools: the table of name, description, argument model and handler, and the tools
that start runs (``think``, ``rank``, ``mutate``, ``ask``).

Each start tool builds the same workflow input the CLI builds, through the CLI's own builders
(``build_input``, ``build_rank_input``, ``build_mutate_input``, ``AskInput``), and starts it
with the typed client. The server is a Temporal client: a run it starts belongs to Temporal and
a worker, never to this process, and outlives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from activities.errors import ConfigError
from client.bundles import bundle, render
from client.ledgers import attach_ledger
from client.mcp import campaigns, follow, plan_steps, plans
from client.mcp.args import (
    AskArgs,
    CampaignRunArgs,
    CheckpointArgs,
    ExportArgs,
    ExtendArgs,
    IssuanceArgs,
    ListRunsArgs,
    MutateArgs,
    NoArgs,
    PlanArgs,
    PlanRunArgs,
    PlanValidateArgs,
    ProfileArgs,
    ProfileSaveArgs,
    RankArgs,
    ResolveGateArgs,
    ResultArgs,
    ResumeArgs,
    RevertArgs,
    RunArgs,
    StepDoneArgs,
    ThinkArgs,
    TournamentArgs,
    WaitArgs,
)
from client.mcp.backend import Backend
from client.mcp.follow import ProgressFn, follow_hint
from client.option_fields import cli_defaults, cli_given, cli_values
from client.profiles import PROFILE_EXISTS, ProfileStore, apply_profile, parse_profile
from client.runs import new_run_id
from client.tournament_estimate import estimate
from client.tournament_inputs import build_input, build_mutate_input, build_rank_input
from client.tournament_options import RunOptions, TournamentSettings
from workflows.ask_types import AskInput
from workflows.run_ids import check_run_id
from workflows.tournament.profiles import BUILTIN_PROFILES
from workflows.tournament.types import TournamentInput

__all__ = ["ALIASES", "TOOLS", "Tool", "find_tool", "listed_tools"]


def _no_file(value: str, field: str) -> str:
    # The CLI reads "@file" on the caller's own machine; over MCP the caller is elsewhere and
    # must not read the server's files through a task.
    if value.startswith("@"):
        raise ConfigError(
            "input.invalid",
            f"{field} starts with @, which the CLI reads as a file name",
            fix="give the text itself (a leading space keeps a literal @)",
        )
    return value


def _tournament_input(
    backend: Backend, args: TournamentArgs, run_id: str, *, dry_run: bool
) -> tuple[TournamentInput, str | None]:
    """The workflow input ``ponder think`` builds from the same settings, and the saved
    profile it drew on (None: a built-in one)."""
    options: dict[str, Any] = {
        # The think options from the same models: ponder think's defaults, then what the
        # caller set; then what the CLI has beside them.
        **cli_defaults(TournamentSettings),
        **cli_defaults(RunOptions),
        **cli_values(args, TournamentSettings),
        **cli_values(args, RunOptions),
        "task": _no_file(args.task, "task"),
        "profile": args.profile,
        "prompts": None,  # a file on the caller's machine: the CLI's alone
        "run_id": run_id,
        "dry_run": dry_run,
    }
    # What the caller gave beats a saved profile; what it left out, the profile may fill.
    given = cli_given(args, TournamentSettings) | cli_given(args, RunOptions) | {"run_id", "task"}
    options, saved = apply_profile(options, given, backend.settings.home)
    return build_input(backend.settings, **options), saved


async def think(backend: Backend, args: ThinkArgs, progress: ProgressFn) -> dict[str, Any]:
    run_id = check_run_id(args.run_id or new_run_id("think"))
    payload, saved = _tournament_input(backend, args, run_id, dry_run=False)
    payload = attach_ledger(payload, backend.settings, args.ledger)
    await backend.ensure_worker()
    await backend.ponder.tournament(payload)
    started = {"run_id": run_id, "kind": "tournament", "profile": saved or args.profile}
    return await _maybe_wait(backend, run_id, args, progress, started)


async def plan(backend: Backend, args: PlanArgs, progress: ProgressFn) -> dict[str, Any]:
    """``ponder think --dry-run``: the calls, rounds and rough USD; nothing starts."""
    run_id = check_run_id(args.run_id or new_run_id("think"))
    payload, saved = _tournament_input(backend, args, run_id, dry_run=True)
    # Off the event loop: preflight plans every phase, which can take a while for a large n.
    forecast = await asyncio.to_thread(estimate, payload)
    return {
        "profile": saved or args.profile,
        **forecast.model_dump(mode="json"),
        "next": "call think with the same arguments to start it",
    }


async def rank(backend: Backend, args: RankArgs, progress: ProgressFn) -> dict[str, Any]:
    run_id = check_run_id(args.run_id or new_run_id("rank"))
    payload = build_rank_input(
        backend.settings,
        (),
        task=_no_file(args.task, "task"),
        rubric=args.rubric,
        model=args.model,
        judges=args.judges,
        judge_orders=args.judge_orders,
        length_control=args.length_control,
        weight_by_confidence=args.weight_by_confidence,
        mode=args.rank_mode,
        rank_k=args.rank_k,
        rank_seed=args.rank_seed,
        rank_max_calls=args.rank_max_calls,
        max_calls=args.max_calls,
        seed=args.seed,
        run_id=run_id,
        given=args.candidates,
    )
    payload = attach_ledger(payload, backend.settings, args.ledger)
    await backend.ensure_worker()
    await backend.ponder.tournament(payload)
    return await _maybe_wait(backend, run_id, args, progress, {"run_id": run_id, "kind": "rank"})


async def mutate(backend: Backend, args: MutateArgs, progress: ProgressFn) -> dict[str, Any]:
    run_id = check_run_id(args.run_id or new_run_id("mutate"))
    payload = build_mutate_input(
        backend.settings,
        args.candidate,
        task=_no_file(args.task, "task"),
        critique=args.critique,
        rubric=args.rubric,
        model=args.model,
        prompt_style=args.prompt_style,
        seed=args.seed,
        run_id=run_id,
    )
    payload = attach_ledger(payload, backend.settings, args.ledger)
    await backend.ensure_worker()
    await backend.ponder.ask(payload)
    return await _maybe_wait(backend, run_id, args, progress, {"run_id": run_id, "kind": "mutate"})


async def ask(backend: Backend, args: AskArgs, progress: ProgressFn) -> dict[str, Any]:
    from activities.providers import resolve_model

    run_id = check_run_id(args.run_id or new_run_id("ask"))
    resolve_model(args.model, backend.settings, require_key=backend.embedded)
    payload = AskInput(
        question=args.question,
        model=args.model,
        system=args.system,
        temperature=args.temperature,
        max_output_tokens=args.max_output_tokens,
        seed=args.seed,
        run_id=run_id,
    )
    payload = attach_ledger(payload, backend.settings, args.ledger)
    await backend.ensure_worker()
    await backend.ponder.ask(payload)
    return await _maybe_wait(backend, run_id, args, progress, {"run_id": run_id, "kind": "ask"})


async def _maybe_wait(
    backend: Backend,
    run_id: str,
    args: WaitArgs,
    progress: ProgressFn,
    started: dict[str, Any],
) -> dict[str, Any]:
    if not args.wait:
        return {**started, "status": "running", "next": follow_hint(run_id)}
    return await follow.outcome(backend, run_id, wait_s=args.timeout_s, progress=progress)


async def profile_list(backend: Backend, args: NoArgs, progress: ProgressFn) -> dict[str, Any]:
    store = ProfileStore(backend.settings.home)
    return {"built_in": list(BUILTIN_PROFILES), "saved": store.names()}


async def profile_show(backend: Backend, args: ProfileArgs, progress: ProgressFn) -> dict[str, Any]:
    if args.name in BUILTIN_PROFILES:
        profile = BUILTIN_PROFILES[args.name].model_dump(mode="json", by_alias=True)
        return {"name": args.name, "kind": "built-in", "profile": profile}
    saved = ProfileStore(backend.settings.home).load(args.name)
    return {
        "name": args.name,
        "kind": "saved",
        "profile": saved.model_dump(mode="json", by_alias=True, exclude_defaults=True),
    }


async def profile_save(
    backend: Backend, args: ProfileSaveArgs, progress: ProgressFn
) -> dict[str, Any]:
    """``ponder profile save``: the same checks (name, secrets, fields) and the same file."""
    store = ProfileStore(backend.settings.home)
    store.check_name(args.name)
    saved = parse_profile(args.settings, f"profile {args.name!r}")
    if store.exists(args.name) and not args.force:
        raise ConfigError(
            PROFILE_EXISTS,
            f"profile {args.name!r} is already saved",
            fix="pass force: true to replace it, or pick another name",
        )
    store.save(args.name, saved)
    return {
        "name": args.name,
        "saved": True,
        "profile": saved.model_dump(mode="json", by_alias=True, exclude_defaults=True),
        "next": f"call think with profile: {args.name!r}",
    }


async def profile_delete(
    backend: Backend, args: ProfileArgs, progress: ProgressFn
) -> dict[str, Any]:
    ProfileStore(backend.settings.home).delete(args.name)
    return {"name": args.name, "deleted": True}


# A tool result travels whole in one JSON-RPC message: past this, ponder export on the
# worker's machine (or the paged ponder://runs/ resources) is the way.
MAX_EXPORT_CHARS = 4 * 1024 * 1024


async def export(backend: Backend, args: ExportArgs, progress: ProgressFn) -> dict[str, Any]:
    """``ponder export``: the same bundle, through the run store's redaction."""
    run_id = check_run_id(args.run_id)
    data = await asyncio.to_thread(bundle, backend.settings, run_id)
    text = await asyncio.to_thread(render, data, args.format)
    if len(text) > MAX_EXPORT_CHARS:
        raise ConfigError(
            "export.too_large",
            f"run {run_id}'s {args.format} bundle is {len(text)} characters, over the "
            f"{MAX_EXPORT_CHARS} a tool result carries",
            fix=f"run ponder export {run_id} where the runs live, or read the paged "
            f"ponder://runs/{run_id}/ resources",
        )
    if args.format == "json":
        return {"run_id": run_id, "format": "json", "bundle": data}
    return {"run_id": run_id, "format": args.format, "text": text}


async def plan_validate(
    backend: Backend, args: PlanValidateArgs, progress: ProgressFn
) -> dict[str, Any]:
    from workflows.plan.boundaries import boundaries, plan_totals
    from workflows.plan.errors import PlanInvalid
    from workflows.plan.validate import validate_text

    checked = validate_text(args.document, filename=args.filename)
    if not checked.ok or checked.plan is None:
        raise PlanInvalid(checked.errors)
    totals = plan_totals(checked.plan, boundaries(checked.plan))
    return {
        "valid": True,
        "form": checked.form,
        "name": checked.plan.name,
        "steps": len(checked.plan.steps),
        "reserved_calls": totals.reserved_calls,
        "calls_cap": totals.calls_cap,
        "notes": checked.notes,
    }


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[Backend, Any, ProgressFn], Awaitable[dict[str, Any]]]

    def input_schema(self) -> dict[str, Any]:
        schema = self.args.model_json_schema(by_alias=True)
        schema.setdefault("properties", {})
        return schema


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "think",
            "Start a tournament on a task (generate, judge, rank, mutate). Returns the run id at "
            "once; with wait: true, waits for the winner and final answer, sending progress.",
            ThinkArgs,
            think,
        ),
        Tool("rank", "Rank given candidate texts by pairwise judging.", RankArgs, rank),
        Tool("mutate", "Improve one candidate from a critique (one call).", MutateArgs, mutate),
        Tool("ask", "One model call through Temporal.", AskArgs, ask),
        Tool("status", "A run's state, phase, calls, budget, top 5.", RunArgs, follow.status),
        Tool(
            "result",
            "A run's outcome: winner, final answer and leaderboard, or the answer, or the error;"
            " with wait: true, waits for it.",
            ResultArgs,
            follow.result,
        ),
        Tool(
            "extend",
            "Raise a run's budget limits (absolute): a tournament's or campaign's calls, USD or "
            "tokens, a plan's calls or wall_ms; a paused run continues.",
            ExtendArgs,
            follow.extend,
        ),
        Tool("cancel", "Cancel a run; calls in flight are recorded.", RunArgs, follow.cancel),
        Tool("list_runs", "Past and live runs, newest first.", ListRunsArgs, follow.runs),
        Tool("profile_list", "Built-in and saved profile names.", NoArgs, profile_list),
        Tool("profile_show", "One profile's settings.", ProfileArgs, profile_show),
        Tool(
            "profile_save",
            "Save think settings as a named profile (think profile: NAME uses it); secrets are "
            "refused.",
            ProfileSaveArgs,
            profile_save,
        ),
        Tool("profile_delete", "Delete a saved profile.", ProfileArgs, profile_delete),
        Tool(
            "plan",
            "Estimate a tournament before starting it (ponder think --dry-run): calls, worst "
            "case, sequential rounds, calls per phase and rough USD. Takes think's arguments; "
            "nothing runs.",
            PlanArgs,
            plan,
        ),
        Tool(
            "export",
            "One run as a portable bundle (ponder export): json, jsonl or markdown; secrets "
            "redacted.",
            ExportArgs,
            export,
        ),
        Tool(
            "plan_validate",
            "Validate a plan document (ponder-plan/1 or loop-plan/1, YAML or JSON) without "
            "running it: every error with its path, or the plan's worst-case calls.",
            PlanValidateArgs,
            plan_validate,
        ),
        Tool(
            "plan_run",
            "Run a plan document (YAML or JSON text). Returns the run id at once; with "
            "wait: true, waits until it completes or pauses (input, gate, budget), with progress.",
            PlanRunArgs,
            plans.plan_run,
        ),
        Tool(
            "resume",
            "Give a paused plan run the argument(s) it waits for; it goes on.",
            ResumeArgs,
            plans.resume,
        ),
        Tool(
            "campaign_run",
            "Run a campaign document (variants x scenarios x seeds; YAML or JSON text). Returns "
            "the run id at once; with wait: true, waits for the decision, with progress.",
            CampaignRunArgs,
            campaigns.campaign_run,
        ),
        Tool(
            "resolve_gate",
            "Decide a plan run's pending human gate: approve, revise or kill.",
            ResolveGateArgs,
            plans.resolve_gate,
        ),
        Tool(
            "issuance",
            "A consumer step's live issuances: the prompt exactly as its executor gets it, the "
            "output contract, the plan digest.",
            IssuanceArgs,
            plan_steps.issuance,
        ),
        Tool(
            "step_done",
            "Answer a consumer step's issuance with its output (or a failure); the run goes on.",
            StepDoneArgs,
            plan_steps.step_done,
        ),
        Tool(
            "checkpoint",
            "Commit a plan run's settled state under a label (revert or --from use it).",
            CheckpointArgs,
            plan_steps.checkpoint,
        ),
        Tool(
            "revert",
            "Go back to a plan run's checkpoint while it waits; live tokens rotate.",
            RevertArgs,
            plan_steps.revert,
        ),
    )
}

ALIASES: dict[str, str] = {
    "think_status": "status",
    "profile_get": "profile_show",
    "runs_list": "list_runs",
    "run_export": "export",
    "estimate": "plan",
}
"""DeepThonk's tool names, so a client configured for it carries over: alias -> ponder's name."""


def find_tool(name: str) -> Tool | None:
    """The tool a name calls: one of ``TOOLS``, or the tool an alias stands for."""
    return TOOLS.get(name) or TOOLS.get(ALIASES.get(name, ""))


def listed_tools() -> list[Tool]:
    """What ``tools/list`` shows: every tool, then each alias as a tool of its own whose
    description says which tool it stands for."""
    aliases = [
        replace(
            TOOLS[name],
            name=alias,
            description=f"Alias of {name} (DeepThonk's name). {TOOLS[name].description}",
        )
        for alias, name in ALIASES.items()
    ]
    return [*TOOLS.values(), *aliases]
