"""The tools on a run that exists: ``status``, ``result``, ``extend``, ``cancel``, ``list_runs``.

Built on the typed client (``client.api``): a run is attached by its workflow type, so a later
kind (plans, campaigns) answers ``status`` and ``result`` with no change here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)

from activities.errors import ConfigError
from client.api import AskRun, Run, RunFailed, TournamentRun
from client.hints import ledger_wait_hint
from client.mcp import campaigns, plans
from client.mcp.args import ExtendArgs, ListRunsArgs, ResultArgs, RunArgs
from client.mcp.backend import Backend
from client.run_list import kind_of, list_runs, run_ended, state_name
from client.runs import failure_view
from workflows.names import CAMPAIGN, PLAN_RUN
from workflows.plan.run_types import ExtendPlanBudgetInput
from workflows.tournament.types import Progress

__all__ = ["ProgressFn", "cancel", "extend", "outcome", "result", "runs", "status"]

ProgressFn = Callable[[float, float | None, str], Awaitable[None]]
POLL_S = 0.5
RESOURCES = ("summary", "leaderboard", "comparisons", "trace", "report")


def follow_hint(run_id: str) -> str:
    return f"call result with run_id {run_id!r} (wait: true to block), or: ponder watch {run_id}"


async def _kind(run: Run[Any]) -> str:
    workflow_type = run.workflow_type or (await run.handle.describe()).workflow_type
    return kind_of(workflow_type)


async def _progress(run: Run[Any]) -> Progress | None:
    if not isinstance(run, TournamentRun):
        return None
    try:
        return await run.progress()
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


async def outcome(
    backend: Backend, run_id: str, *, wait_s: float, progress: ProgressFn | None
) -> dict[str, Any]:
    """The run's result if it ended (waiting up to ``wait_s``), else its state and progress."""
    run = await backend.ponder.attach(run_id)
    kind = await _kind(run)
    if kind == "plan":
        return await plans.outcome(backend, run_id, wait_s=wait_s, progress=progress)
    if kind == "campaign":
        return await campaigns.outcome(backend, run_id, wait_s=wait_s, progress=progress)
    state = await run.status()
    if state == WorkflowExecutionStatus.RUNNING:
        await backend.ensure_worker()
    deadline = time.monotonic() + wait_s
    while state == WorkflowExecutionStatus.RUNNING:
        live = await _progress(run)
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
                    "kind": await _kind(run),
                    "status": "awaiting_budget",
                    "progress": _progress_view(live),
                    "next": ledger_wait_hint(live.blocking_limit)
                    or f"call extend with run_id {run_id!r} and a higher "
                    f"{live.blocking_limit}; the run continues where it stopped",
                }
        if time.monotonic() >= deadline:
            view: dict[str, Any] = {"run_id": run_id, "kind": await _kind(run), "status": "running"}
            if live is not None:
                view["progress"] = _progress_view(live)
            return {**view, "next": follow_hint(run_id)}
        await asyncio.sleep(POLL_S)
        state = await run.status()
    return await _ended(run, state)


async def _ended(run: Run[Any], state: WorkflowExecutionStatus | None) -> dict[str, Any]:
    view: dict[str, Any] = {"run_id": run.id, "kind": await _kind(run), "status": state_name(state)}
    try:
        done = await run.result()
    except RunFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, WorkflowFailureError):
            return {**view, **failure_view(cause), "status": view["status"]}
        return {**view, "code": exc.code, "error": exc.message}
    if isinstance(run, TournamentRun):
        return {
            **view,
            "winner_id": done.winner_id,
            "final_answer": done.final_answer,
            "leaderboard": [r.model_dump() for r in done.leaderboard],
            "calls": done.spent.calls,
            "usd": done.spent.usd,
            "simulated": done.simulated,
            "resources": {name: f"ponder://runs/{run.id}/{name}" for name in RESOURCES},
        }
    if isinstance(run, AskRun):
        r = done.response
        return {
            **view,
            "answer": r.text,
            "model": f"{r.provider}:{r.model}",
            "simulated": r.simulated,
            "usage": r.usage.model_dump(),
            "usd": r.usd,
        }
    # Plans and campaigns: their result model as JSON, whatever it holds.
    return {**view, "result": done.model_dump(mode="json") if hasattr(done, "model_dump") else done}


async def status(backend: Backend, args: RunArgs, progress: ProgressFn) -> dict[str, Any]:
    run = await backend.ponder.attach(args.run_id)
    description = await run.handle.describe()
    view: dict[str, Any] = {
        "run_id": run.id,
        "kind": await _kind(run),
        "status": state_name(description.status),
        "started": description.start_time.isoformat() if description.start_time else None,
        "closed": description.close_time.isoformat() if description.close_time else None,
    }
    if description.workflow_type == PLAN_RUN:
        await backend.ensure_worker()
        plan = await plans.outcome(backend, run.id, wait_s=0, progress=None)
        return {**view, **plan}
    if description.workflow_type == CAMPAIGN:
        await backend.ensure_worker()
        return {**view, **await campaigns.outcome(backend, run.id, wait_s=0, progress=None)}
    if isinstance(run, TournamentRun):
        await backend.ensure_worker()  # a query is answered by a worker
        live = await _progress(run)
        if live is not None:
            view["status"] = live.status
            view["progress"] = _progress_view(live)
    if description.status == WorkflowExecutionStatus.FAILED:
        try:
            await run.result()
        except RunFailed as exc:
            view["error"] = str(exc)
    return view


async def result(backend: Backend, args: ResultArgs, progress: ProgressFn) -> dict[str, Any]:
    wait_s = args.timeout_s if args.wait else 0
    return await outcome(backend, args.run_id, wait_s=wait_s, progress=progress)


async def extend(backend: Backend, args: ExtendArgs, progress: ProgressFn) -> dict[str, Any]:
    limits = args.model_dump(
        include={"max_calls", "max_usd", "max_input_tokens", "max_output_tokens"}
    )
    if all(v is None for v in limits.values()) and args.wall_ms is None and args.tokens is None:
        raise ConfigError(
            "option.missing",  # ponder extend's code for the same mistake
            "extend needs at least one new limit",
            fix="give max_calls, max_usd, max_input_tokens, max_output_tokens or (plans) wall_ms, "
            "tokens",
        )
    run = await backend.ponder.attach(args.run_id)
    description = await run.handle.describe()
    if description.status != WorkflowExecutionStatus.RUNNING:
        raise run_ended(run.id, state_name(description.status), "extend")
    if await _kind(run) == "campaign":
        return await campaigns.extend(
            backend, run.id, limits, wait=args.wait, wait_s=args.timeout_s, progress=progress
        )
    if await _kind(run) == "plan":
        if args.max_input_tokens is not None or args.max_output_tokens is not None:
            raise ConfigError(
                "input.invalid",
                "a plan run has one token limit, input and output together",
                fix="give tokens (the new total) instead of max_input_tokens / max_output_tokens",
            )
        plan_limits = ExtendPlanBudgetInput(
            calls=args.max_calls, wall_ms=args.wall_ms, tokens=args.tokens, usd=args.max_usd
        )
        return await plans.extend(
            backend, run.id, plan_limits, wait=args.wait, wait_s=args.timeout_s, progress=progress
        )
    if args.tokens is not None or args.wall_ms is not None:
        raise ConfigError(
            "option.invalid",  # as ponder extend --tokens of a tournament says
            "tokens and wall_ms are a plan run's limits",
            fix="give max_calls, max_usd, max_input_tokens or max_output_tokens",
        )
    if not isinstance(run, TournamentRun):
        raise ConfigError(
            "run.kind_invalid",
            f"run {run.id} is not a tournament",
            fix="extend a tournament's run id",
        )
    await backend.ensure_worker()
    try:
        done = await run.extend(**limits)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        raise ConfigError(
            "budget.extend_refused",
            str(getattr(cause, "message", cause)),
            fix="give limits above what the run has already spent (see the status tool)",
        ) from None
    view = {
        "run_id": run.id,
        "budget": done.budget.model_dump(exclude_none=True),
        "spent": done.spent.model_dump(),
    }
    if not args.wait:
        return {**view, "status": "running", "next": follow_hint(run.id)}
    return {**view, **await outcome(backend, run.id, wait_s=args.timeout_s, progress=progress)}


async def cancel(backend: Backend, args: RunArgs, progress: ProgressFn) -> dict[str, Any]:
    run = await backend.ponder.attach(args.run_id)
    status = (await run.handle.describe()).status
    if status != WorkflowExecutionStatus.RUNNING:  # Temporal accepts it and does nothing
        state = state_name(status)
        return {
            "run_id": run.id,
            "status": state,
            "next": f"run {run.id} has already ended ({state}): nothing to cancel; the result "
            "tool shows its outcome",
        }
    await backend.ensure_worker()  # the cancellation drains calls and writes artifacts
    await run.cancel(wait=False)
    return {
        "run_id": run.id,
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
        cells=args.cells,
    )
    return {"runs": [r.model_dump(mode="json") for r in rows]}
