"""How a run ends and what it leaves on disk: ``run.closed``, ``trace.jsonl``, ``cost.json`` and
``progress.json`` (its status query's last answer, which ``ponder status`` reads once it has ended).

The trace is also written at every human wait (a pause, a gate, a budget wait) and when the run
starts waiting for a consumer, so a person looking at the run directory while it waits sees why.
``checkpoints.json`` (every committed label) is written once, when the run ends. Only the first
write sends the trace and the call rows whole; later ones send the lines added since (they are
activity input, so in history: a whole trace at every wait grew history with waits x trace
size). A run directory that lost lines (``run.files_gap``: deleted, or another worker's disk) is
sent whole again.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from workflows.activity_contracts import (
        FILES_GAP,
        HEARTBEAT_TIMEOUT,
        WRITE_RUN_FILES,
        FileAppend,
        WriteRunFilesInput,
    )
    from workflows.plan.activity_contracts import WRITE_PLAN_FILES
    from workflows.plan.checkpoints import CHECKPOINTS_FILE, checkpoints_json
    from workflows.plan.preflight import REQE_DEBT_FILE
    from workflows.plan.run_files import args_json, calls_jsonl, graph_json, outputs_json
    from workflows.plan.run_types import RunState
    from workflows.plan_run.preflight import WRITE_RETRY
    from workflows.plan_run.state import PlanRunState
    from workflows.progress_file import PROGRESS_FILE, progress_json

__all__ = ["end_run", "fail_now", "write_trace"]

PLAN_REPORT_PATCH = "plan-report-html"


def fail_now(run: PlanRunState, code: str, message: str) -> None:
    """A run refused before it opened: queries still answer, nothing is written."""
    run.state = "failed"
    run.reason = code
    run.error = f"{code}: {message}"
    run.record.event("run.closed", outcome="failed", reason=code, error=message)


async def end_run(
    run: PlanRunState, state: RunState, reason: str | None, detail: str | None
) -> None:
    run.state = state
    run.reason = reason
    run.current = None
    run.error = f"{reason}: {detail}" if reason else None
    run.gates.clear()
    run.pending_pause = None
    run.desk.rotate()  # no issuance outlives the run
    if run.waiting_since is not None:  # cancelled or failed while a person was awaited
        run.waited_ms += int((workflow.now() - run.waiting_since).total_seconds() * 1000)
        run.waiting_since = None
    await _side_tasks(run, cancel=state == "cancelled")
    run.record.event(
        "run.closed", outcome=state, reason=reason, error=detail, route=run.route_label
    )
    await write_trace(run, final=True)
    await workflow.wait_condition(workflow.all_handlers_finished)


async def _side_tasks(run: PlanRunState, *, cancel: bool) -> None:
    """Let background work (escalation posts, each bounded by its activity timeouts) record
    its outcome before the trace closes; a cancelled run cancels it instead."""
    pending = [t for t in run.side_tasks if not t.done()]
    if not pending:
        return
    if cancel:
        for task in pending:
            task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def write_trace(run: PlanRunState, *, final: bool = False) -> None:
    elapsed_ms = 0
    if run.wall_started is not None:
        elapsed_ms = int((workflow.now() - run.wall_started).total_seconds() * 1000)
    grown = {
        "trace.jsonl": (len(run.record.events), run.record.trace_jsonl),
        "calls.jsonl": (len(run.record.calls), lambda start: calls_jsonl(run.record.calls[start:])),
    }
    files = {
        "cost.json": run.record.cost_json(
            run_id=run.run_id,
            plan=run.plan.name if run.plan else "",
            outcome=run.state,
            # The wall the budget charged, as status shows it (waits for a person are not).
            wall_ms=run.ledger.wall_spent_ms if run.ledger is not None else 0,
            waited_ms=run.waited_ms,
            elapsed_ms=elapsed_ms,
        ),
        "graph.json": graph_json(run.plan, run.record.steps),
        "args.json": args_json(run.args),
        "outputs.json": outputs_json(run.outputs),
    }
    if run.reqe_debt is not None:
        files[REQE_DEBT_FILE] = run.reqe_debt
    if final:  # what `ponder status` shows of the closed run (its gates and issuances are gone)
        files[PROGRESS_FILE] = progress_json(
            "plan",
            run.status().model_dump(mode="json"),
            started_at=workflow.info().start_time.isoformat(),
            written_at=workflow.now().isoformat(),
        )
    if final and run.book.snapshots:  # a closed run takes no revert: --from starts from these
        plan = run.plan.name if run.plan else ""
        files[CHECKPOINTS_FILE] = checkpoints_json(run.book, run_id=run.run_id, plan=plan)
    appends = {
        name: FileAppend(after_lines=run.shipped_lines[name], text=lines(run.shipped_lines[name]))
        for name, (_, lines) in grown.items()
        if name in run.shipped_lines
    }
    whole = {name: lines(0) for name, (_, lines) in grown.items() if name not in run.shipped_lines}
    # report.html is rendered with them (the patch keeps earlier histories replaying).
    report = workflow.patched(PLAN_REPORT_PATCH)
    try:
        await _write(run, report, {**files, **whole}, appends)
    except ActivityError as exc:
        if not appends or getattr(exc.cause, "type", None) != FILES_GAP:
            raise
        await _write(run, report, {**files, **{n: lines(0) for n, (_, lines) in grown.items()}})
    run.shipped_lines = {name: count for name, (count, _) in grown.items()}


async def _write(
    run: PlanRunState,
    report: bool,
    files: dict[str, str],
    appends: dict[str, FileAppend] | None = None,
) -> None:
    await workflow.execute_activity(
        WRITE_PLAN_FILES if report else WRITE_RUN_FILES,
        WriteRunFilesInput(
            run_id=run.run_id,
            files=files,
            appends=appends or {},
            chain=workflow.info().first_execution_run_id,
        ),
        result_type=list[str],
        start_to_close_timeout=timedelta(minutes=2),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,  # a killed worker: retried within seconds
        retry_policy=WRITE_RETRY,
    )
