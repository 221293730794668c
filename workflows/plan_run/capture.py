"""Training-pair capture (docs/plans.md, "Training pairs"), from workflow code.

With ``training_pairs: true`` the dispatcher calls ``capture`` at each successful settle of an
agent step (chain members, redos and every item each count; failures never do). The record is
built pure (``workflows.plan.training``) and written by the ``append_training_pair`` activity,
at most once per key. Capture never decides an outcome:

    empty output -> ``capture.failed {reason: empty-output}``
    a record that cannot be UTF-8 JSON -> ``unserializable``
    the file system refused the write -> ``io``; anything else that went wrong -> ``threw``
    written -> ``capture.written``; already there (a retry, a repeated backfill) -> ``capture.dup``

Each failure is traced and listed in ``capture_failures`` (status and the result).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows.plan.activity_contracts import APPEND_TRAINING_PAIR, CAPTURE_IO
    from workflows.plan.model import AgentStep, Plan
    from workflows.plan.routing import step_family
    from workflows.plan.run_types import CaptureFailure
    from workflows.plan.training import (
        AppendTrainingPairInput,
        AppendTrainingPairResult,
        Provenance,
        Unserializable,
        build_pair,
        clip_detail,
        pair_line,
    )
    from workflows.plan_run.dispatch import SettledHook
    from workflows.plan_run.state import PlanRunState

__all__ = ["MAX_CAPTURE_FAILURES", "capture_hook"]

MAX_CAPTURE_FAILURES = 100
"""``capture_failures`` keeps the first this many (the trace has every ``capture.failed``)."""
CAPTURE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_attempts=3,
    non_retryable_error_types=[CAPTURE_IO, "capture.invalid"],
)
Mode = Literal["capture", "backfill"]
Reason = Literal["threw", "unserializable", "empty-output", "io"]


def capture_hook(run: PlanRunState, plan: Plan, models: dict[str, str]) -> SettledHook:
    async def capture(
        step: AgentStep, sid: str, prompt: str, output: str, item: int | None, invocation: str
    ) -> None:
        # A sub-flow child is routed, and its pairs filed, under its scoped id (``short/gist``):
        # its bare id names no model and would collide with a top-level step's file.
        await capture_pair(
            run, plan, step, models[sid], prompt=prompt, output=output, item=item,
            invocation=invocation, sid=sid,
        )  # fmt: skip

    return capture


def _failed(run: PlanRunState, step: str, mode: Mode, reason: Reason, detail: str | None) -> None:
    clipped = clip_detail(detail) if detail else None
    run.record.event("capture.failed", step=step, mode=mode, reason=reason, detail=clipped)
    if len(run.capture_failures) < MAX_CAPTURE_FAILURES:
        run.capture_failures.append(
            CaptureFailure(step=step, mode=mode, reason=reason, detail=clipped)
        )


async def capture_pair(
    run: PlanRunState,
    plan: Plan,
    step: AgentStep,
    spec: str,
    *,
    prompt: str,
    output: str,
    item: int | None,
    invocation: str,
    mode: Mode = "capture",
    resumed: bool = False,
    sid: str | None = None,
) -> None:
    """``sid``: the step's scoped id (None: a top-level step, its own id)."""
    sid = sid or step.id
    if not output.strip():
        _failed(run, sid, mode, "empty-output", None)
        return
    row = next((c for c in reversed(run.record.calls) if c.invocation == invocation), None)
    try:
        pair = build_pair(
            plan=plan.name,
            run_id=run.run_id,
            step=sid,
            item=item,
            ts=workflow.now().isoformat(),
            input=prompt,
            output=output,
            provenance=Provenance(
                model=spec,
                family=step_family(step.model, spec, step.family),
                role=step.role or step.id,
                tokens=(row.input_tokens + row.output_tokens) if row else None,
                minutes=round(row.latency_ms / 60_000, 4) if row else None,
            ),
            capture_mode=mode,
            resumed=resumed,
        )
        line = pair_line(pair)
    except Unserializable as exc:
        _failed(run, sid, mode, "unserializable", str(exc))
        return
    except Exception as exc:  # capture never decides an outcome
        _failed(run, sid, mode, "threw", f"{type(exc).__name__}: {exc}")
        return
    try:
        result = await workflow.execute_activity(
            APPEND_TRAINING_PAIR,
            AppendTrainingPairInput(
                plan=plan.name,
                step=sid,
                line=line,
                key=pair.key,
                chain=workflow.info().first_execution_run_id,
            ),
            result_type=AppendTrainingPairResult,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=CAPTURE_RETRY,
        )
    except ActivityError as exc:
        if is_cancelled_exception(exc):
            raise
        cause = exc.cause
        io = isinstance(cause, ApplicationError) and cause.type == CAPTURE_IO
        message = cause.message if isinstance(cause, ApplicationError) else str(cause or exc)
        _failed(run, sid, mode, "io" if io else "threw", message)
        return
    extra = {"repaired": result.repaired} if result.repaired else {}
    run.record.event(
        "capture.written" if result.outcome == "written" else "capture.dup",
        step=sid,
        mode=mode,
        item=item,
        key=pair.key,
        file=result.file,
        **extra,
    )
