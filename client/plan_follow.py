"""What the plan-run commands do (``client.plan_run_cli`` declares them and imports this only
when one runs, so their ``--help`` loads no Temporal SDK): start a ``PlanRun`` and follow it with
a live status table until it completes (0), fails (1) or pauses (75, printing the exact command
that continues it); answer a paused run through the workflow's updates (a refusal is one line,
exit 2) and then follow it the same way, unless ``--detach``; show a plan run's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from activities.config import Settings
from activities.errors import ConfigError
from client.call_progress import above_panel, retries_shown
from client.consoles import text_console
from client.exit_codes import EXIT_PAUSED
from client.hints import ponder_program
from client.live import live_panel
from client.plan_display import continue_command, status_table
from client.plan_extend import plan_limits
from client.runs import (
    RunFailed,
    ctrl_c_detaches,
    detach,
    new_run_id,
    report_path,
    run_result,
    start_and_follow,
)
from client.session import Session, open_session, query_answerer, spawn_background_worker
from workflows.bounds import MAX_DECIDER_CHARS
from workflows.names import (
    PLAN_RUN,
    QUERY_STATUS,
    UPDATE_EXTEND_BUDGET,
    UPDATE_RESOLVE_GATE,
    UPDATE_RESUME,
)
from workflows.plan.reasons import Reason
from workflows.plan.run_types import (
    PlanBudgetOverride,
    PlanRunInput,
    PlanRunResult,
    PlanStatus,
    ResolveGateInput,
    ResumeInput,
)
from workflows.run_ids import check_run_id

__all__ = [
    "extend_plan_command",
    "extend_plan_run",
    "finish",
    "follow",
    "gate_decision",
    "plan_status",
    "resume_run",
    "start_plan",
    "watch_plan",
]

POLL_S = 0.25
console = text_console(stderr=True)


def _pairs(values: tuple[str, ...], flag: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise ConfigError("option.invalid", f"{flag} {value!r} must be KEY=VALUE")
        out[key.strip()] = rest
    return out


def _budget(text: str | None) -> PlanBudgetOverride | None:
    if text is None:
        return None
    fields: dict[str, Any] = {}
    for key, value in _pairs(tuple(p for p in text.split(",") if p), "--budget").items():
        if key not in ("calls", "wall_ms", "tokens", "usd"):
            raise ConfigError(
                "option.invalid", f"--budget {key}= is not one of calls, wall_ms, tokens, usd"
            )
        try:
            fields[key] = float(value) if key == "usd" else int(value)
        except ValueError:
            raise ConfigError(
                "option.invalid", f"--budget {key}={value!r} needs a number"
            ) from None
    return PlanBudgetOverride(**fields)


# -- following a run -----------------------------------------------------------------------


def _signature(s: PlanStatus) -> tuple[str, str | None, tuple[str, ...]]:
    tokens = [g.token for g in s.pending_gates] + [i.token for i in s.issuances]
    return s.state, s.step, tuple(tokens)


async def _status(handle: WorkflowHandle) -> PlanStatus | None:
    try:
        status: PlanStatus = await handle.query(QUERY_STATUS, result_type=PlanStatus)
    except RPCError:
        return None  # not started by a worker yet, or the server restarts
    return status


async def _final_status(handle: WorkflowHandle) -> PlanStatus | None:
    """The status of a run that just ended (a closed run answers from its worker's replay);
    none within 10 s leaves the last frame as it was."""
    try:
        return await asyncio.wait_for(_status(handle), 10)
    except TimeoutError:
        return None


def _timed(status: PlanStatus) -> bool:
    """Whether the wait acts by itself: a pending gate's deadline or escalation."""
    return any(gate.deadline_at or gate.escalate_at for gate in status.pending_gates)


async def follow(
    session: Session, handle: WorkflowHandle, *, answered: PlanStatus | None = None
) -> PlanRunResult | PlanStatus:
    """Follow until the run ends (its result) or pauses (its status). ``answered`` is the pause
    just answered: seeing it again is the moment before the run moves on, not a new pause."""
    result = asyncio.ensure_future(run_result(handle))
    stale = _signature(answered) if answered else None
    paused: PlanStatus | None = None
    with ctrl_c_detaches() as interrupted, live_panel(console, transient=False) as live:
        # A failed call attempt (a refused connection, a 503), the run's or a tournament step's, is
        # printed above the panel as it happens, not only when the last retry fails the step.
        async with retries_shown(handle, above_panel(console), client=session.client):
            while not result.done():
                if interrupted.is_set():
                    result.cancel()
                    detach(session, handle.id)
                current = await _status(handle)
                if current is not None:
                    live.update(status_table(current))
                    if current.state.startswith("awaiting_") and _signature(current) != stale:
                        paused = current
                        break
                await asyncio.wait({result}, timeout=POLL_S)
        if paused is None and (final := await _final_status(handle)) is not None:
            # The last poll may predate the end (an extension lands, the run finishes between
            # two polls): the panel left on screen shows the state the run ended in.
            live.update(status_table(final))
    if paused is not None:
        result.cancel()
        if session.embedded and _timed(paused):
            # Its timers fire on the server whether or not a worker runs; once this command
            # has gone, the home's background worker acts on them.
            spawn_background_worker(session.settings)
        await _print_report(session, handle.id, paused=True)
        return paused
    try:
        outcome: PlanRunResult = result.result()
    except WorkflowFailureError as exc:
        report = await report_path(session.settings, handle.id, paused=False)
        where = f"; report: {report}" if report else ""
        raise RunFailed.of(handle.id, exc, where=where) from exc
    await _print_report(session, handle.id, paused=False)
    return outcome


async def _print_report(session: Session, run_id: str, *, paused: bool) -> None:
    report = await report_path(session.settings, run_id, paused=paused)
    if report is not None:
        click.echo(f"report: {report}", err=True)


def finish(outcome: PlanRunResult | PlanStatus) -> NoReturn:
    if isinstance(outcome, PlanStatus):
        what = outcome.pending_pause.resume_arg if outcome.pending_pause else outcome.step
        click.echo(
            f"\nrun {outcome.run_id} is paused ({outcome.state}, {outcome.reason}: {what})",
            err=True,
        )
        if outcome.budget and outcome.budget.need:
            click.echo(f"needs: {outcome.budget.need}", err=True)
        click.echo(f"continue with: {continue_command(outcome)}", err=True)
        sys.exit(EXIT_PAUSED)
    last = list(outcome.outputs.values())[-1] if outcome.outputs else ""
    click.echo(last if isinstance(last, str) else json.dumps(last, indent=2))
    label = " (simulated)" if outcome.simulated else ""
    route = f" via route {outcome.route}" if outcome.route else ""
    click.echo(f"-- run {outcome.run_id} completed{route}: {outcome.calls} calls{label}", err=True)
    sys.exit(0)


def start_plan(settings: Settings, file: str, options: dict[str, Any]) -> NoReturn:
    """``ponder plan run FILE``: validate (exit 2 with every error), start, follow, finish."""
    # The validator and the input's checks load only for a run (status and watch skip them).
    from client.documents import check_text
    from client.plan_input import check_source_checkpoint, from_checkpoint, routing, run_workspace
    from client.validate_output import print_invalid
    from workflows.plan.stratum import run_args

    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            "file.unreadable", f"cannot read {file}: {exc}; fix: check the path"
        ) from None
    checked, document = check_text(text, None if file == "-" else file, settings)
    if not checked.ok:
        print_invalid(file, checked.errors)
    run_id = check_run_id(options["run_id"] or new_run_id("plan"))
    try:  # a stratum flow's inputs are declared and typed; any other plan's are text
        args = run_args(checked.translated or {}, _pairs(options["args"], "--arg"))
    except ValueError as exc:
        raise ConfigError("option.invalid", str(exc)) from None
    executors, default_family = routing(
        settings, _pairs(options["executors"], "--executor"), options["default_family"]
    )
    source = from_checkpoint(options["from_"])
    if source is not None:  # refused here, before a run opens, when this run store can tell
        check_source_checkpoint(settings.runs_dir, source, embedded=not settings.temporal_address)
    payload = PlanRunInput(
        plan=document,
        run_id=run_id,
        args=args,
        workspace=run_workspace(options["workspace"], checked.plan),
        budget=_budget(options["budget"]),
        executors=executors,
        default_family=default_family,
        coder_family=options["coder_family"],
        allow_same_family_qe=options["allow_same_family_qe"],
        seed=options["seed"],
        from_checkpoint=source,
    )

    finish(
        asyncio.run(
            start_and_follow(
                settings, PLAN_RUN, payload, run_id, PlanRunResult, follow, detach=options["detach"]
            )
        )
    )


async def _answer(
    settings: Settings,
    run_id: str,
    update: str,
    make: Any,
    *,
    detach_after: bool,
    update_id: Any = None,
    answers: Any = None,
) -> PlanRunResult | PlanStatus:
    """Send ``make(status)`` as ``update`` to a paused run, then follow it (or return).
    ``update_id(arg)``: the update's id (Temporal answers a retried id once); ``answers(status,
    arg)``: whether ``arg`` answers the wait ``status`` shows (default: it does)."""
    async with open_session(settings, worker=not detach_after) as session:
        handle = session.client.get_workflow_handle(check_run_id(run_id), result_type=PlanRunResult)
        if (await handle.describe()).workflow_type != PLAN_RUN:
            raise ConfigError("run.kind_invalid", f"run {run_id} is not a plan run")
        async with query_answerer(session) if detach_after else contextlib.nullcontext():
            before = await handle.query(QUERY_STATUS, result_type=PlanStatus)
        arg = make(before)
        chosen = update_id(arg) if update_id is not None else None
        answered = before if answers is None or answers(before, arg) else None
        return await _send(session, handle, update, arg, answered, detach_after, chosen)


async def _send(
    session: Session,
    handle: WorkflowHandle,
    update: str,
    arg: Any,
    before: PlanStatus | None,
    detach_after: bool,
    update_id: str | None = None,
) -> PlanRunResult | PlanStatus:
    """``before``: the wait this update answers (None: it answers none the run shows now)."""
    if detach_after and session.embedded:
        # Before the update, so the worker that takes the run on outlives this command.
        spawn_background_worker(session.settings)
    await handle.execute_update(update, arg, id=update_id)  # a refusal: coded by client.failures
    if detach_after:
        follow_it = f"{ponder_program()} watch {handle.id}"
        click.echo(f"{update} accepted; the run goes on: {follow_it}", err=True)
        sys.exit(0)
    # An extension answers only a budget pause; a run waiting for a person still waits, and
    # following it must report that wait at once rather than wait for another.
    budget_wait = before is not None and before.state in ("awaiting_budget", "awaiting_wall_clock")
    answered = before if update != UPDATE_EXTEND_BUDGET or budget_wait else None
    return await follow(session, handle, answered=answered)


async def extend_plan_run(
    session: Session, handle: WorkflowHandle, detach_after: bool, **flags: str | None
) -> PlanRunResult | PlanStatus:
    """``ponder extend ID`` (and ``ponder plan extend ID``) on a plan run: ``--calls``,
    ``--wall-ms``, ``--tokens``, ``--usd``, each absolute or ``+N``."""
    handle = session.client.get_workflow_handle(handle.id, result_type=PlanRunResult)
    async with query_answerer(session) if detach_after else contextlib.nullcontext():
        before = await handle.query(QUERY_STATUS, result_type=PlanStatus)
    arg = plan_limits(before.budget, **flags)
    return await _send(session, handle, UPDATE_EXTEND_BUDGET, arg, before, detach_after)


def resume_run(settings: Settings, run_id: str, args: tuple[str, ...], detach: bool) -> NoReturn:
    """``ponder resume``: the paused run's argument, then follow it (or return)."""
    values = _pairs(args, "--arg")
    finish(
        asyncio.run(
            _answer(
                settings,
                run_id,
                UPDATE_RESUME,
                lambda _: ResumeInput(args=dict(values)),
                detach_after=detach,
            )
        )
    )


def gate_decision(
    settings: Settings, decision: str, run_id: str, step: str, detach: bool
) -> NoReturn:
    """``ponder gate``: the decision on a pending gate, its token read from the run's status."""

    def make(status: PlanStatus) -> ResolveGateInput:
        tokens = {g.step: g.token for g in status.pending_gates}
        if step not in tokens and step in status.deadline_decided:
            raise ConfigError(
                Reason.STALE_GATE_TOKEN,
                f"the deadline of gate {step!r} passed and its default "
                "decision applied; nobody can decide it now",
            )
        if step not in tokens:
            waiting = ", ".join(tokens) or "none"
            raise ConfigError(
                Reason.UNKNOWN_STEP, f"{step!r} is not a pending gate (pending: {waiting})"
            )
        return ResolveGateInput(step=step, decision=decision, token=tokens[step], by=_who())

    finish(asyncio.run(_answer(settings, run_id, UPDATE_RESOLVE_GATE, make, detach_after=detach)))


def extend_plan_command(
    settings: Settings, run_id: str, returns: bool, flags: dict[str, str | None]
) -> NoReturn:
    """``ponder plan extend``: raise a plan run's limits; ``returns``: once they are accepted."""

    async def go() -> PlanRunResult | PlanStatus:
        async with open_session(settings) as session:
            handle = session.client.get_workflow_handle(check_run_id(run_id))
            if (await handle.describe()).workflow_type != PLAN_RUN:
                raise ConfigError("run.kind_invalid", f"run {run_id} is not a plan run")
            return await extend_plan_run(session, handle, returns, **flags)

    finish(asyncio.run(go()))


def _who() -> str | None:
    """Who decides a gate from this shell: the local user name (the report's "by")."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment or the password database
        return None
    name = "".join(c for c in name if c.isprintable())[:MAX_DECIDER_CHARS]
    return name or None


async def plan_status(handle: WorkflowHandle) -> PlanStatus:
    """``ponder status`` of a plan run: its status query."""
    shown: PlanStatus = await handle.query(QUERY_STATUS, result_type=PlanStatus)
    return shown


async def watch_plan(session: Session, run_id: str) -> PlanRunResult | PlanStatus:
    """``ponder watch`` of a plan run: follow it until it ends or pauses."""
    handle = session.client.get_workflow_handle(run_id, result_type=PlanRunResult)
    return await follow(session, handle)
