"""The plan tools: ``plan_run``, ``resume``, ``resolve_gate``, and a plan run's status/outcome.

A plan is given as its text (YAML or JSON) and validated as ``ponder plan validate`` does;
the run is a ``PlanRun`` workflow. A paused run (input, gate, budget) answers with what it
waits for and the tool call that continues it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.service import RPCError

from activities.errors import ConfigError
from client.documents import check_text
from client.hints import ledger_wait_hint
from client.ledgers import attach_ledger
from client.mcp.args import PlanRunArgs, ResolveGateArgs, ResumeArgs
from client.mcp.backend import Backend
from client.plan_display import blocking_limit
from client.plan_input import check_source_checkpoint, from_checkpoint, routing, run_workspace
from client.runs import failure_view, new_run_id, report_path, start_run
from workflows.names import PLAN_RUN, QUERY_STATUS, UPDATE_RESOLVE_GATE, UPDATE_RESUME
from workflows.plan.errors import PlanInvalid
from workflows.plan.run_types import (
    ExtendPlanBudgetInput,
    PendingGate,
    PlanRunInput,
    PlanRunResult,
    PlanStatus,
    ResolveGateInput,
    ResumeInput,
)
from workflows.run_ids import check_run_id

__all__ = ["extend", "outcome", "plan_run", "resolve_gate", "resume", "status_view"]

POLL_S = 0.25
Signature = tuple[str, str | None, tuple[str, ...]]


def _handle(backend: Backend, run_id: str) -> WorkflowHandle:
    return backend.client.get_workflow_handle(check_run_id(run_id), result_type=PlanRunResult)


async def _status(handle: WorkflowHandle) -> PlanStatus | None:
    try:
        status: PlanStatus = await handle.query(QUERY_STATUS, result_type=PlanStatus)
    except RPCError:
        return None  # not picked up by a worker yet
    return status


def _signature(s: PlanStatus) -> Signature:
    tokens = [g.token for g in s.pending_gates] + [i.token for i in s.issuances]
    return s.state, s.step, tuple(tokens)


def _next(s: PlanStatus) -> str:
    """The tool call that continues a paused run."""
    if s.state == "awaiting_input" and s.pending_pause:
        return (
            f"call resume with run_id {s.run_id!r} and args {{{s.pending_pause.resume_arg!r}: ...}}"
        )
    if s.state == "awaiting_gate" and s.pending_gates:
        gate = s.pending_gates[0]
        return (
            f"call resolve_gate with run_id {s.run_id!r}, step {gate.step!r} and decision "
            f"one of {', '.join(gate.decisions)}"
        )
    if s.state == "awaiting_consumer" and s.issuances:
        i = s.issuances[0]
        return (
            f"call issuance with run_id {s.run_id!r} and step {i.step!r} for the prompt, do the "
            f"work, then step_done with run_id {s.run_id!r}, step {i.step!r}, token {i.token!r} "
            "and output (or failure)"
        )
    if s.budget and (ledger := ledger_wait_hint(s.budget.need)) is not None:
        return ledger
    if s.state in ("awaiting_budget", "awaiting_wall_clock") and s.budget:
        blocked = blocking_limit(s.budget)
        which = (
            "tokens (input + output)" if blocked == "tokens"
            else "max_usd" if blocked == "usd"
            else "wall_ms within the cap" if s.state == "awaiting_wall_clock"
            else "max_calls within the cap"
        )  # fmt: skip
        return f"call extend with run_id {s.run_id!r} and a higher {which}"
    return f"call status with run_id {s.run_id!r}"


def _gate_view(g: PendingGate) -> dict[str, Any]:
    """A pending gate without its token (the resolve_gate tool reads it itself), with its
    deadline and escalation when it has them."""
    view: dict[str, Any] = {"step": g.step, "decisions": g.decisions, "round": g.round}
    if g.deadline_at is not None:
        view.update(deadline_at=g.deadline_at, default=g.default)
    if g.escalate_at is not None:
        view.update(escalate_at=g.escalate_at, escalated=g.escalated, notify=g.notify)
    return view


def status_view(s: PlanStatus) -> dict[str, Any]:
    view: dict[str, Any] = {
        "run_id": s.run_id,
        "kind": "plan",
        "plan": s.plan,
        "status": s.state,
        "reason": s.reason,
        "step": s.step,
        "steps": s.steps,
        "simulated": s.simulated,
    }
    if s.pending_pause:
        view["pending_pause"] = s.pending_pause.model_dump()
    if s.pending_gates:
        view["pending_gates"] = [_gate_view(g) for g in s.pending_gates]
    if s.capture_failures:
        view["capture_failures"] = [f.model_dump() for f in s.capture_failures]
    if s.issuances:
        view["issuances"] = [i.model_dump() for i in s.issuances]
    if s.checkpoints:
        view["checkpoints"] = s.checkpoints
    if s.resumed:
        view["resumed"] = s.resumed
    if s.budget:
        view["budget"] = s.budget.model_dump()
    if s.ledgers:
        view["ledgers"] = [ledger.model_dump() for ledger in s.ledgers]
    if s.error:
        view["error"] = s.error
    if s.state.startswith("awaiting_"):
        view["next"] = _next(s)
    return view


async def outcome(
    backend: Backend,
    run_id: str,
    *,
    wait_s: float,
    progress: Any,
    answered: Signature | None = None,
) -> dict[str, Any]:
    """The plan run's result if it ended (waiting up to ``wait_s``), else its status; a pause
    other than ``answered`` (the one just answered) ends the wait."""
    handle = _handle(backend, run_id)
    result = asyncio.ensure_future(handle.result())
    deadline = time.monotonic() + wait_s
    last: PlanStatus | None = None
    closed = (await handle.describe()).status != WorkflowExecutionStatus.RUNNING
    ended = False
    try:
        while not closed and not result.done():
            current = await _status(handle)
            if current is not None:
                last = current
                if progress is not None:
                    settled = sum(1 for v in current.steps.values() if v == "settled")
                    total = float(len(current.steps)) or None
                    await progress(
                        float(settled), total, f"{current.state}: step {current.step or '-'}"
                    )
                if current.state.startswith("awaiting_") and _signature(current) != answered:
                    return await _with_report(backend, status_view(current), paused=True)
            if time.monotonic() >= deadline:
                view = status_view(last) if last else {"run_id": run_id, "kind": "plan"}
                return {**view, "next": view.get("next") or _follow(run_id)}
            await asyncio.wait({result}, timeout=POLL_S)
        ended = True
    finally:
        if not ended:  # paused, timed out or interrupted: nobody waits for the result now
            result.cancel()
    try:
        done: PlanRunResult = await result
    except WorkflowFailureError as exc:
        failed = {"run_id": run_id, "kind": "plan", **failure_view(exc)}
        return await _with_report(backend, failed, paused=False)
    view = {"kind": "plan", **done.model_dump(mode="json")}
    return await _with_report(backend, view, paused=False)


async def _with_report(backend: Backend, view: dict[str, Any], *, paused: bool) -> dict[str, Any]:
    """``report``: the path of the run's report.html, when this server sees the run store."""
    path = await report_path(backend.settings, str(view["run_id"]), paused=paused)
    return {**view, "report": str(path)} if path is not None else view


def _follow(run_id: str) -> str:
    return f"call result with run_id {run_id!r} (wait: true to block), or: ponder watch {run_id}"


async def plan_run(backend: Backend, args: PlanRunArgs, progress: Any) -> dict[str, Any]:
    # Saved profiles in tournament steps expanded, as ponder plan run does.
    checked, document = check_text(args.document, args.filename, backend.settings)
    if not checked.ok:
        raise PlanInvalid(checked.errors)
    run_id = check_run_id(args.run_id or new_run_id("plan"))
    executors, default_family = routing(backend.settings, args.executors, args.default_family)
    source = from_checkpoint(args.from_checkpoint, field="from_checkpoint")
    if source is not None:  # as the CLI: refused before a run opens when this store can tell
        check_source_checkpoint(
            backend.settings.runs_dir,
            source,
            embedded=not backend.settings.temporal_address,
            field="from_checkpoint",
        )
    payload = PlanRunInput(
        plan=document,
        run_id=run_id,
        args=args.args,
        # As the CLI: an explicit one, else the plan's own, else (when the plan declares files)
        # where this server was started; the worker holds it to its declared roots.
        workspace=run_workspace(args.workspace, checked.plan),
        budget=args.budget,
        executors=executors,
        default_family=default_family,
        coder_family=args.coder_family,
        allow_same_family_qe=args.allow_same_family_qe,
        seed=args.seed,
        from_checkpoint=source,
    )
    payload = attach_ledger(payload, backend.settings, args.ledger)
    await backend.ensure_worker()
    await start_run(backend.session, PLAN_RUN, payload, run_id, PlanRunResult)
    if not args.wait:
        return {"run_id": run_id, "kind": "plan", "status": "running", "next": _follow(run_id)}
    return await outcome(backend, run_id, wait_s=args.timeout_s, progress=progress)


async def _answer(
    backend: Backend, run_id: str, update: str, payload: Any, *, wait: bool, wait_s: float,
    progress: Any, before: PlanStatus, update_id: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    handle = _handle(backend, run_id)
    # A refusal (a validator's is typed with its plan reason): coded by client.failures.
    await handle.execute_update(update, payload, id=update_id)
    if not wait:
        return {"run_id": run_id, "kind": "plan", "status": "accepted", "next": _follow(run_id)}
    return await outcome(
        backend, run_id, wait_s=wait_s, progress=progress, answered=_signature(before)
    )


async def _paused(backend: Backend, run_id: str) -> PlanStatus:
    handle = _handle(backend, run_id)
    if (await handle.describe()).workflow_type != PLAN_RUN:
        raise ConfigError(
            "run.kind_invalid", f"run {run_id} is not a plan run", fix="give a plan run"
        )
    await backend.ensure_worker()
    status = await _status(handle)
    if status is None:
        raise ConfigError("run.not_ready", f"run {run_id} does not answer yet", fix="try again")
    return status


async def resume(backend: Backend, args: ResumeArgs, progress: Any) -> dict[str, Any]:
    before = await _paused(backend, args.run_id)
    return await _answer(
        backend, args.run_id, UPDATE_RESUME, ResumeInput(args=args.args), wait=args.wait,
        wait_s=args.timeout_s, progress=progress, before=before,
    )  # fmt: skip


async def resolve_gate(backend: Backend, args: ResolveGateArgs, progress: Any) -> dict[str, Any]:
    before = await _paused(backend, args.run_id)
    tokens = {g.step: g.token for g in before.pending_gates}
    if args.step not in tokens and args.step in before.deadline_decided:
        raise ConfigError(
            "stale-gate-token",
            f"the deadline of gate {args.step!r} passed and its default decision applied",
            fix="nothing to decide: see the status tool for what the run waits for now",
        )
    if args.step not in tokens:
        raise ConfigError(
            "unknown-step",
            f"{args.step!r} is not a pending gate (pending: {', '.join(tokens) or 'none'})",
            fix="give the step of a pending gate (see the status tool)",
        )
    decision = ResolveGateInput(
        step=args.step, decision=args.decision, token=tokens[args.step], by="an MCP client"
    )
    return await _answer(
        backend, args.run_id, UPDATE_RESOLVE_GATE, decision, wait=args.wait,
        wait_s=args.timeout_s, progress=progress, before=before,
    )  # fmt: skip


async def extend(
    backend: Backend, run_id: str, limits: ExtendPlanBudgetInput, *, wait: bool,
    wait_s: float, progress: Any,
) -> dict[str, Any]:  # fmt: skip
    """Every limit that can pause a plan run: calls, wall_ms, tokens, usd."""
    from workflows.names import UPDATE_EXTEND_BUDGET

    before = await _paused(backend, run_id)
    return await _answer(
        backend, run_id, UPDATE_EXTEND_BUDGET, limits, wait=wait, wait_s=wait_s,
        progress=progress, before=before,
    )  # fmt: skip
