"""Preflight (docs/plans.md): the start arguments, then the refusals in their fixed order,
before anything runs; what survives opens the ledger and the dispatcher.

    trace-emit-required -> plan-model-unroutable -> escalation-unroutable (an activity asks
    the worker for the notifiers gate escalations name) -> artifact-path-escapes-root (an
    activity looks at the workspace) -> worktree-unavailable (a worktree fan-out: git and a
    work tree, asked of an activity) -> same-family-qe-refused (or a loud waiver) ->
    reservation-unsatisfiable (opening the ledger)
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from workflows import metrics
    from workflows.ledger.types import ledger_wait
    from workflows.plan.activity_contracts import CHECK_NOTIFIERS, CHECK_PATHS
    from workflows.plan.deadlines import notifiers_named
    from workflows.plan.ledgers import Ledgers
    from workflows.plan.model import Plan
    from workflows.plan.preflight import (
        REQE_DEBT_FILE,
        check_trace,
        declared_paths,
        default_calls_differ,
        open_ledger,
        qe_unchecked,
        qe_waivers,
        reqe_debt,
        route_models,
    )
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan.run_types import CheckNotifiersInput, PathsInput
    from workflows.plan_run.capture import capture_hook
    from workflows.plan_run.dispatch import Dispatcher
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.worktrees import check_worktrees

__all__ = ["WRITE_RETRY", "preflight"]

WRITE_RETRY = RetryPolicy(maximum_attempts=10, non_retryable_error_types=["ValueError"])
WORKSPACE_ROOTS_PATCH = "plan-workspace-roots"
DEFAULT_PER_ITEM_PATCH = "plan-default-budget-per-item"
NESTED_LEDGERS_PATCH = "plan-nested-ledgers-per-dispatch"


async def check_notifiers(plan: Plan) -> None:
    """Every notifier a gate escalation names is declared on the worker (asked only when a
    plan names one, so plans without escalation run the commands they always did)."""
    named = notifiers_named(plan)
    if not named:
        return
    unknown: list[str] = await workflow.execute_activity(
        CHECK_NOTIFIERS,
        CheckNotifiersInput(names=sorted(named)),
        result_type=list[str],
        start_to_close_timeout=timedelta(seconds=30),
        retry_policy=WRITE_RETRY,
    )
    if unknown:
        where = "; ".join(f"{name} (gate {', '.join(named[name])})" for name in unknown)
        raise PlanFailure(
            Reason.ESCALATION_UNROUTABLE,
            f"no notifier on this worker for: {where}; fix: declare [notifiers.NAME] "
            'kind = "webhook" with url (or url_env) in the worker\'s ponder.toml, or drop '
            "escalate.notify",
        )


async def preflight(run: PlanRunState, plan: Plan) -> Dispatcher:
    check_trace(plan)
    models = route_models(plan, run.input)
    await check_notifiers(plan)
    workspace = plan.workspace or run.input.workspace
    declared = declared_paths(plan)
    # Any workspace the input names is held to the worker's declared roots (the patch keeps
    # histories from before that check replaying).
    if declared or (workspace is not None and workflow.patched(WORKSPACE_ROOTS_PATCH)):
        if workspace is None:
            raise PlanFailure(
                Reason.ARTIFACT_PATH_ESCAPES_ROOT,
                "steps declare artifacts but the run has no workspace; fix: --workspace DIR",
            )
        field = "plan.workspace" if plan.workspace else "workspace"
        problems: list[str] = await workflow.execute_activity(
            CHECK_PATHS,
            PathsInput(workspace=workspace, paths=declared, field=field),
            result_type=list[str],
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=WRITE_RETRY,
        )
        if problems:
            raise PlanFailure(Reason.ARTIFACT_PATH_ESCAPES_ROOT, "; ".join(problems))
    await check_worktrees(plan, workspace)
    waived = []
    for step_id, waiver in qe_waivers(plan, models, run.input):
        run.record.waivers.append(waiver)
        run.record.event("waiver", step=step_id, message=waiver, debt=REQE_DEBT_FILE)
        waived.append(step_id)
    if waived and run.input.coder_family:
        run.reqe_debt = reqe_debt(
            run_id=run.run_id,
            plan=plan.name,
            coder_family=run.input.coder_family,
            steps=waived,
            emitted_at=workflow.now().isoformat(),
        )
    for step_id in qe_unchecked(plan, run.input):
        # Nobody said who wrote the code, so nothing can be checked: say so in the trace.
        run.record.event("qe.unchecked", step=step_id, fix="--coder-family FAMILY")
    # The default call budget counts every region item (histories from before the rule
    # replay with the reference's, a chain member once).
    per_item = not default_calls_differ(plan) or workflow.patched(DEFAULT_PER_ITEM_PATCH)
    run.ledger = open_ledger(plan, run.input, per_item=per_item)
    run.ledgers = Ledgers.for_plan(plan)
    # Asked only by plans with nested budgets: histories from before replay the old rules.
    if run.ledgers.nested and workflow.patched(NESTED_LEDGERS_PATCH):
        run.ledgers.reference_rules()

    def provider_wait(until: datetime | None, code: str) -> None:
        """A provider asked to wait longer than a call may, or no MCP session serves an mcp:
        call: the run sleeps on a timer."""
        if until is not None:
            run.record.event("waiting_provider", until=until.isoformat(), code=code)

    # The ledger pause the metrics counted: its room's end closes it even when the run's state
    # moved on meanwhile (another wait, a cancel), so started and ended stay paired.
    counted: list[bool] = [False]

    async def ledger_paused(ledger: str, limit: str) -> None:
        """The run's shared ledger refused a call: the run waits as for its own budget."""
        if run.state == "running":
            run.wait_state("awaiting_budget", Reason.BUDGET_EXHAUSTED)
            run.need = ledger_wait(ledger, f"{limit} limit of its period reached")
            if not counted[0]:
                counted[0] = True
                metrics.pause_started("awaiting_budget")
        run.record.event("ledger.waiting", ledger=ledger, limit=limit)
        # Imported here: finish imports this module (through the walk).
        from workflows.plan_run.finish import write_trace

        await write_trace(run)

    def ledger_resumed(ledger: str) -> None:
        if counted[0]:
            counted[0] = False
            metrics.pause_ended("awaiting_budget")
        if run.state == "awaiting_budget" and (run.need or "").startswith("ledger "):
            run.running()
            run.need = None
        run.record.event("ledger.resumed", ledger=ledger)

    run.ledger_room.paused, run.ledger_room.resumed = ledger_paused, ledger_resumed
    dispatcher = Dispatcher(
        run_id=run.run_id,
        seed=run.input.seed,
        plan=plan,
        models=models,
        ledger=run.ledger,
        record=run.record,
        workspace=workspace,
        options=run.input.calls,
        on_wait=provider_wait,
        control=run.control,
        ledgers=run.ledgers,
        ledger_room=run.ledger_room,
    )
    if plan.training_pairs:  # opt-in: a plan without it runs the commands it always did
        dispatcher.on_settled = capture_hook(run, plan, models)
    return dispatcher
