"""The MCP tools: argument models (their JSON Schemas are the tools' input schemas) and handlers.

Each tool builds the same workflow input the CLI builds, through the CLI's own builders
(``build_input``, ``build_rank_input``, ``build_mutate_input``, ``AskInput``), so a refusal reads
the same from either side. The server is a Temporal client: a run it starts belongs to Temporal
and a worker, never to this process, and outlives it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)

from activities.config import Settings
from client.mcp.errors import CodedError
from client.profiles import ProfileStore, apply_profile
from client.runs import check_run_id, failure_message, new_run_id
from client.runs_cli import KINDS, STATUSES, list_runs
from client.session import NO_WORKER_WAIT_S, spawn_background_worker, wait_for_worker
from workflows.ask_types import AskInput, AskResult
from workflows.budget import BudgetLimits
from workflows.inputs import StrictModel
from workflows.names import ASK, QUERY_PROGRESS, TOURNAMENT, UPDATE_EXTEND_BUDGET
from workflows.tournament.profiles import BUILTIN_PROFILES, RankMode
from workflows.tournament.prompts import Style
from workflows.tournament.types import (
    Concurrency,
    ExtendBudgetInput,
    ExtendBudgetResult,
    GivenCandidate,
    OnBudgetExhausted,
    Progress,
    Schedule,
    TournamentInput,
    TournamentResult,
)

__all__ = ["TOOLS", "Backend", "Tool"]

ProgressFn = Callable[[float, float | None, str], Awaitable[None]]

POLL_S = 0.5
DEFAULT_WAIT_S = 600.0


@dataclass
class Backend:
    """What every tool needs: settings, the Temporal client, and whether the server is ours."""

    settings: Settings
    client: Client
    embedded: bool

    async def ensure_worker(self) -> None:
        """Someone must run the workflows: this home's background worker (embedded), or a
        worker already polling the task queue (a cluster)."""
        if self.embedded:
            await asyncio.to_thread(spawn_background_worker, self.settings)
        else:
            await wait_for_worker(self.client, self.settings.task_queue, NO_WORKER_WAIT_S)

    def handle(self, run_id: str) -> WorkflowHandle:
        return self.client.get_workflow_handle(check_run_id(run_id))


# -- arguments ------------------------------------------------------------------------------


class WaitArgs(StrictModel):
    wait: bool = Field(
        default=False,
        description="false: return the run id at once (the run goes on); true: wait for the "
        "outcome, with progress notifications, up to timeout_s",
    )
    timeout_s: float = Field(
        default=DEFAULT_WAIT_S, gt=0, le=3600, description="longest wait when wait is true"
    )


class ThinkArgs(WaitArgs):
    """``ponder think``: a tournament on a task."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    task: str = Field(min_length=1, description="the task text")
    profile: str = Field(
        default="quick",
        description=f"built-in ({', '.join(BUILTIN_PROFILES)}) or a saved profile name",
    )
    n: int | None = None
    k: int | None = None
    t: int | None = None
    m: int | None = None
    lambda_: float | None = Field(default=None, alias="lambda")
    temperatures: dict[str, float] = Field(
        default={}, description="by role: generate, judge, mutate, finalize"
    )
    provider: str | None = Field(default=None, description="provider for every role, e.g. sim")
    model: str | None = Field(default=None, description="provider:model for every role")
    judge_model: str | None = None
    mutator_model: str | None = None
    finalizer_model: str | None = None
    rubric: str | None = None
    prompt_style: Style | None = None
    schedule: Schedule | None = None
    seed: int | None = None
    budget: BudgetLimits = BudgetLimits()
    concurrency: Concurrency | None = None
    on_budget_exhausted: OnBudgetExhausted | None = None
    invalid_json_retries: int | None = Field(default=None, ge=0)
    run_id: str | None = None


class RankArgs(WaitArgs):
    """``ponder rank``: rank given candidate texts by pairwise judging."""

    task: str = Field(min_length=1)
    candidates: list[GivenCandidate] = Field(min_length=2, description="id and text of each")
    rubric: str | None = None
    model: str | None = Field(default=None, description="judge model, provider:model")
    rank_mode: RankMode = "auto"
    rank_k: int | None = None
    rank_seed: int | None = None
    rank_max_calls: int | None = Field(default=None, ge=1)
    max_calls: int | None = Field(default=None, ge=0)
    seed: int | None = None
    run_id: str | None = None


class MutateArgs(WaitArgs):
    """``ponder mutate``: improve one candidate from a critique."""

    task: str = Field(min_length=1)
    candidate: str
    critique: str
    rubric: str | None = None
    model: str | None = Field(default=None, description="mutator model, provider:model")
    prompt_style: Style = "general"
    seed: int = 0
    run_id: str | None = None


class AskArgs(WaitArgs):
    """``ponder ask``: one model call through Temporal."""

    question: str = Field(min_length=1)
    model: str = AskInput.model_fields["model"].default
    system: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    seed: int = 0
    run_id: str | None = None


class RunArgs(StrictModel):
    run_id: str = Field(description="the run id a tool or the CLI printed")


class ResultArgs(RunArgs, WaitArgs):
    pass


class ExtendArgs(ExtendBudgetInput, WaitArgs):
    """New absolute limits (fields left out keep theirs); a paused run continues."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    run_id: str


class ListRunsArgs(StrictModel):
    kind: str | None = Field(default=None, description=" | ".join(KINDS))
    status: str | None = Field(default=None, description=" | ".join(STATUSES))
    since: str | None = Field(default=None, description="30m, 2h, 7d, 1w or an ISO date")
    limit: int = Field(default=50, ge=1, le=500)


class NoArgs(StrictModel):
    pass


class ProfileArgs(StrictModel):
    name: str


# -- handlers -------------------------------------------------------------------------------


async def _start(backend: Backend, workflow: str, payload: BaseModel, run_id: str) -> None:
    from client.runs import start_run
    from client.session import Session

    await backend.ensure_worker()
    session = Session(backend.client, backend.settings, embedded=backend.embedded)
    await start_run(session, workflow, payload, run_id)


def _no_file(value: str, field: str) -> str:
    # The CLI reads "@file" on the caller's own machine; over MCP the caller is elsewhere and
    # must not read the server's files through a task.
    if value.startswith("@"):
        raise CodedError(
            "input.invalid",
            f"{field} starts with @, which the CLI reads as a file name",
            "give the text itself (a leading space keeps a literal @)",
        )
    return value


async def think(backend: Backend, args: ThinkArgs, progress: ProgressFn) -> dict[str, Any]:
    from client.tournament_cli import build_input

    run_id = check_run_id(args.run_id or new_run_id("think"))
    b = args.budget
    options: dict[str, Any] = {
        "task": _no_file(args.task, "task"),
        "rubric": args.rubric,
        "profile": args.profile,
        "n": args.n,
        "k": args.k,
        "t": args.t,
        "m": args.m,
        "lambda_": args.lambda_,
        "temperature": tuple(f"{r}={v}" for r, v in args.temperatures.items()),
        "provider": args.provider,
        "model": args.model,
        "judge_model": args.judge_model,
        "mutator_model": args.mutator_model,
        "finalizer_model": args.finalizer_model,
        "prompt_style": args.prompt_style or "general",
        "prompts": None,
        "include_prompts": False,
        "schedule": args.schedule or "k-regular",
        "concurrency": ()
        if args.concurrency is None
        else tuple(f"{p}={v}" for p, v in args.concurrency),
        "seed": args.seed,
        "max_calls": b.max_calls,
        "max_usd": b.max_usd,
        "max_input_tokens": b.max_input_tokens,
        "max_output_tokens": () if b.max_output_tokens is None else (str(b.max_output_tokens),),
        "max_critique_chars": TournamentInput.model_fields["critique_chars"].default,
        "on_budget_exhausted": args.on_budget_exhausted or "pause",
        "invalid_json_retries": 1
        if args.invalid_json_retries is None
        else args.invalid_json_retries,
        "include_raw_outputs": False,
        "run_id": run_id,
        "dry_run": False,
    }
    # What the caller gave beats a saved profile; what it left out, the profile may fill.
    given = {_OPTION.get(f, f) for f in args.model_fields_set} | {"run_id", "task"}
    given |= {limit for limit, value in b if value is not None}
    options, saved = apply_profile(options, given, backend.settings.home)
    payload = build_input(backend.settings, **options)
    await _start(backend, TOURNAMENT, payload, run_id)
    started = {"run_id": run_id, "kind": "tournament", "profile": saved or args.profile}
    return await _maybe_wait(backend, run_id, args, progress, started)


_OPTION = {"temperatures": "temperature"}


async def rank(backend: Backend, args: RankArgs, progress: ProgressFn) -> dict[str, Any]:
    from client.tournament_services import build_rank_input

    run_id = check_run_id(args.run_id or new_run_id("rank"))
    payload = build_rank_input(
        backend.settings,
        (),
        task=_no_file(args.task, "task"),
        rubric=args.rubric,
        model=args.model,
        mode=args.rank_mode,
        rank_k=args.rank_k,
        rank_seed=args.rank_seed,
        rank_max_calls=args.rank_max_calls,
        max_calls=args.max_calls,
        seed=args.seed,
        run_id=run_id,
        given=args.candidates,
    )
    await _start(backend, TOURNAMENT, payload, run_id)
    return await _maybe_wait(backend, run_id, args, progress, {"run_id": run_id, "kind": "rank"})


async def mutate(backend: Backend, args: MutateArgs, progress: ProgressFn) -> dict[str, Any]:
    from client.tournament_services import build_mutate_input

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
    await _start(backend, ASK, payload, run_id)
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
    await _start(backend, ASK, payload, run_id)
    return await _maybe_wait(backend, run_id, args, progress, {"run_id": run_id, "kind": "ask"})


def _follow_hint(run_id: str) -> str:
    return f"call result with run_id {run_id!r} (wait: true to block), or: ponder watch {run_id}"


async def _maybe_wait(
    backend: Backend,
    run_id: str,
    args: WaitArgs,
    progress: ProgressFn,
    started: dict[str, Any],
) -> dict[str, Any]:
    if not args.wait:
        return {**started, "status": "running", "next": _follow_hint(run_id)}
    return await _outcome(backend, run_id, wait_s=args.timeout_s, progress=progress)


async def _progress(handle: WorkflowHandle) -> Progress | None:
    try:
        return await handle.query(QUERY_PROGRESS, result_type=Progress)
    except Exception:  # no answer yet (a worker picking the run up): progress is best effort
        return None


def _progress_view(p: Progress) -> dict[str, Any]:
    return {
        "phase": p.phase,
        "generation": p.generation,
        "calls": p.spent.calls,
        "calls_planned": p.calls_planned,
        "usd": p.spent.usd if p.usd_known else None,
        "budget": p.budget.model_dump(exclude_none=True),
        "blocking_limit": p.blocking_limit,
        "leaderboard": [r.model_dump() for r in p.leaderboard],
        "error": p.error,
    }


def _state(status: WorkflowExecutionStatus | None) -> str:
    if status is None:
        return "unknown"
    if status == WorkflowExecutionStatus.CANCELED:
        return "cancelled"
    return status.name.lower()


async def _outcome(
    backend: Backend, run_id: str, *, wait_s: float, progress: ProgressFn | None
) -> dict[str, Any]:
    """The run's result if it ended (waiting up to ``wait_s``), else its state and progress."""
    handle = backend.handle(run_id)
    description = await handle.describe()
    kind = description.workflow_type
    if description.status == WorkflowExecutionStatus.RUNNING:
        await backend.ensure_worker()
    deadline = time.monotonic() + wait_s
    while description.status == WorkflowExecutionStatus.RUNNING:
        live = await _progress(handle) if kind == TOURNAMENT else None
        if live is not None:
            if progress is not None:
                await progress(
                    float(live.spent.calls),
                    float(live.calls_planned) or None,
                    f"{live.phase}: {live.spent.calls}/{live.calls_planned} calls ({live.status})",
                )
            if live.status == "awaiting_budget" and live.in_flight == 0:
                return {
                    "run_id": run_id,
                    "kind": "tournament",
                    "status": "awaiting_budget",
                    "progress": _progress_view(live),
                    "next": f"call extend with run_id {run_id!r} and a higher "
                    f"{live.blocking_limit}; the run continues where it stopped",
                }
        if time.monotonic() >= deadline:
            view: dict[str, Any] = {"run_id": run_id, "kind": kind.lower(), "status": "running"}
            if live is not None:
                view["progress"] = _progress_view(live)
            return {**view, "next": _follow_hint(run_id)}
        await asyncio.sleep(POLL_S)
        description = await handle.describe()
    return await _ended(backend, handle, kind, description.status)


async def _ended(
    backend: Backend, handle: WorkflowHandle, kind: str, status: WorkflowExecutionStatus | None
) -> dict[str, Any]:
    run_id = handle.id
    view: dict[str, Any] = {"run_id": run_id, "status": _state(status)}
    if status != WorkflowExecutionStatus.COMPLETED:
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            view["error"] = failure_message(exc)
        return {"kind": kind.lower(), **view}
    if kind == TOURNAMENT:
        typed = backend.client.get_workflow_handle(run_id, result_type=TournamentResult)
        t: TournamentResult = await typed.result()
        return {
            "kind": "tournament",
            **view,
            "winner_id": t.winner_id,
            "final_answer": t.final_answer,
            "leaderboard": [r.model_dump() for r in t.leaderboard],
            "calls": t.spent.calls,
            "usd": t.spent.usd,
            "simulated": t.simulated,
            "resources": {
                name: f"ponder://runs/{run_id}/{name}"
                for name in ("summary", "leaderboard", "comparisons", "trace", "report")
            },
        }
    if kind == ASK:
        typed = backend.client.get_workflow_handle(run_id, result_type=AskResult)
        a: AskResult = await typed.result()
        r = a.response
        return {
            "kind": "ask",
            **view,
            "answer": r.text,
            "model": f"{r.provider}:{r.model}",
            "simulated": r.simulated,
            "usage": r.usage.model_dump(),
            "usd": r.usd,
        }
    # Plans and campaigns: their result models as JSON, whatever they hold.
    return {"kind": kind.lower(), **view, "result": await handle.result()}


async def status(backend: Backend, args: RunArgs, progress: ProgressFn) -> dict[str, Any]:
    handle = backend.handle(args.run_id)
    description = await handle.describe()
    view: dict[str, Any] = {
        "run_id": handle.id,
        "kind": description.workflow_type.lower(),
        "status": _state(description.status),
        "started": description.start_time.isoformat() if description.start_time else None,
        "closed": description.close_time.isoformat() if description.close_time else None,
    }
    if description.workflow_type == TOURNAMENT:
        await backend.ensure_worker()  # a query is answered by a worker
        live = await _progress(handle)
        if live is not None:
            view["status"] = live.status
            view["progress"] = _progress_view(live)
    if description.status == WorkflowExecutionStatus.FAILED:
        try:
            await handle.result()
        except WorkflowFailureError as exc:
            view["error"] = failure_message(exc)
    return view


async def result(backend: Backend, args: ResultArgs, progress: ProgressFn) -> dict[str, Any]:
    return await _outcome(
        backend, args.run_id, wait_s=args.timeout_s if args.wait else 0, progress=progress
    )


async def extend(backend: Backend, args: ExtendArgs, progress: ProgressFn) -> dict[str, Any]:
    new = ExtendBudgetInput(
        **args.model_dump(include={"max_calls", "max_usd", "max_input_tokens", "max_output_tokens"})
    )
    if all(v is None for v in new.model_dump().values()):
        raise CodedError(
            "input.invalid",
            "extend needs at least one new limit",
            "give max_calls, max_usd, max_input_tokens or max_output_tokens (absolute values)",
        )
    handle = backend.handle(args.run_id)
    await backend.ensure_worker()
    try:
        done = await handle.execute_update(
            UPDATE_EXTEND_BUDGET, new, result_type=ExtendBudgetResult
        )
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise CodedError(
            "budget.extend_refused",
            str(getattr(cause, "message", cause)),
            "give limits above what the run has already spent (see the status tool)",
        ) from None
    view = {
        "run_id": handle.id,
        "budget": done.budget.model_dump(exclude_none=True),
        "spent": done.spent.model_dump(),
    }
    if not args.wait:
        return {**view, "status": "running", "next": _follow_hint(handle.id)}
    return {**view, **await _outcome(backend, handle.id, wait_s=args.timeout_s, progress=progress)}


async def cancel(backend: Backend, args: RunArgs, progress: ProgressFn) -> dict[str, Any]:
    handle = backend.handle(args.run_id)
    await backend.ensure_worker()  # the cancellation drains calls and writes artifacts
    await handle.cancel()
    return {
        "run_id": handle.id,
        "status": "cancelling",
        "next": "in-flight calls finish and are recorded; the status tool shows cancelled",
    }


async def runs(backend: Backend, args: ListRunsArgs, progress: ProgressFn) -> dict[str, Any]:
    rows = await list_runs(
        backend.settings,
        backend.client,
        kind=args.kind,
        status=args.status,
        since=args.since,
        limit=args.limit,
    )
    return {"runs": [r.model_dump(mode="json") for r in rows]}


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


# -- the table ------------------------------------------------------------------------------


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
        Tool(
            "status", "A run's state and progress (phase, calls, budget, top 5).", RunArgs, status
        ),
        Tool(
            "result",
            "A run's outcome: winner, final answer and leaderboard, or the answer, or the error;"
            " with wait: true, waits for it.",
            ResultArgs,
            result,
        ),
        Tool(
            "extend",
            "Raise a tournament's budget limits (absolute); a paused run continues.",
            ExtendArgs,
            extend,
        ),
        Tool("cancel", "Cancel a run; calls in flight are recorded.", RunArgs, cancel),
        Tool("list_runs", "Past and live runs, newest first.", ListRunsArgs, runs),
        Tool("profile_list", "Built-in and saved profile names.", NoArgs, profile_list),
        Tool("profile_show", "One profile's settings.", ProfileArgs, profile_show),
    )
}
