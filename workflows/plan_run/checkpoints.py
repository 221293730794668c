"""Checkpoints from workflow code: fingerprint, commit, revert, and restore from another run.

    a top-level step settles -> its fingerprint; with ``checkpoint: LABEL`` -> commit
    ``checkpoint(label)`` (any time) -> commit the settled state (``checkpoint_control``)
    ``revert(label)`` while the run waits -> every wait ends with ``Reverted`` -> the walk
    restores the snapshot (``apply_revert``) and goes on at the first unsettled step
    ``--from RUN:LABEL`` -> at each top-level step, a settled step of that checkpoint whose
    fingerprint matches and whose declared writes exist is restored (``resumed``), not run

Ledgers and the dispatcher's counters (invocation numbers, the sim index) are never restored:
spending is real, and invocation ids stay unique in the trace.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.inputs import INPUT_INVALID
    from workflows.plan.activity_contracts import (
        READ_CHECKPOINT,
        SNAPSHOT_WRITES,
        ReadCheckpointInput,
    )
    from workflows.plan.boundaries import AnyStep, Boundary
    from workflows.plan.checkpoints import (
        RestorePoint,
        RevertResult,
        Snapshot,
        fingerprint,
    )
    from workflows.plan.flows import scoped
    from workflows.plan.gates import defang
    from workflows.plan.model import (
        AgentStep,
        FanoutStep,
        GateStep,
        PauseStep,
        Plan,
        RunStep,
        TournamentStep,
    )
    from workflows.plan.prompts import assemble_prompt
    from workflows.plan.reasons import Reason
    from workflows.plan.refs import RefError, render
    from workflows.plan.run_record import PlanFailure
    from workflows.plan.run_types import FromCheckpoint, PathsInput, WriteSnapshot
    from workflows.plan_run.capture import capture_pair
    from workflows.plan_run.dispatch import WORKSPACE_RETRY, Dispatcher
    from workflows.plan_run.regions import region_items
    from workflows.plan_run.state import PlanRunState
    from workflows.run_capabilities import CAPABILITY_INVALID, CAPABILITY_REQUIRED

__all__ = [
    "MAX_RETIRED_TOKENS",
    "apply_revert",
    "commit",
    "note_fingerprint",
    "open_restore_point",
    "restore",
]

MAX_RETIRED_TOKENS = 200
_CAPABILITIES = (CAPABILITY_REQUIRED, CAPABILITY_INVALID)
READ_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["ValueError"])
_COSMETIC = {"title", "checkpoint"}


def step_fingerprint(
    run: PlanRunState, dispatcher: Dispatcher, plan: Plan, step: AnyStep
) -> str | None:
    """The step's fingerprint as of now (its deps settled), or None if it cannot be rendered."""
    deps = [run.outputs.get(d) for d in step.deps]
    model = dispatcher.models.get(step.id)
    contract = None
    try:
        if isinstance(step, AgentStep | GateStep) and step.prompt is not None:
            if isinstance(step, AgentStep) and step.out is not None:
                contract = dict(plan.contracts.get(step.out, {}))
            rendered = render(step.prompt, inputs=run.args, outputs=run.outputs, splice=defang)
            upstream = run.outputs.get(step.deps[0]) if len(step.deps) == 1 else None
            text = assemble_prompt(step, rendered, contract=contract, upstream=upstream)
        elif isinstance(step, TournamentStep):
            text = render(step.prompt, inputs=run.args, outputs=run.outputs, splice=defang)
        elif isinstance(step, FanoutStep):
            members = [_definition(plan.step(m)) for m in step.fanout.chain]
            models = [dispatcher.models.get(m) for m in step.fanout.chain]
            items = region_items(run, step)
            text = _json([_definition(step), members, models, items])
        elif isinstance(step, PauseStep | GateStep):
            text = _json(_definition(step))  # settled by a person, on the deps' outputs
        elif isinstance(step, RunStep):  # its body reads what its `with` renders to
            rendered = render(_json(step.with_), inputs=run.args, outputs=run.outputs)
            text = _json(
                [_definition(step), plan.flows[step.flow].model_dump(mode="json"), rendered]
            )
        else:  # a kind computed from the run's input (set): the input is part of it
            text = _json([_definition(step), run.args])
    except (RefError, PlanFailure, KeyError):
        return None
    return fingerprint(step.id, model=model, contract=contract, rendered=text, deps_outputs=deps)


def note_fingerprint(run: PlanRunState, dispatcher: Dispatcher, plan: Plan, step: AnyStep) -> None:
    """After a top-level step settles: what a checkpoint records for it."""
    if run.record.steps.get(step.id) != "settled":
        return
    found = step_fingerprint(run, dispatcher, plan, step)
    if found is not None:
        run.fingerprints[step.id] = found


def snapshot(run: PlanRunState, label: str, by: str) -> Snapshot:
    settled = {s for s, state in run.record.steps.items() if state == "settled"}
    seq = len(run.record.events) + 1  # the checkpoint.committed event that follows
    return Snapshot(
        label=label,
        seq=seq,
        committed_at=workflow.now().isoformat(),
        by=by,
        outputs={s: run.outputs[s] for s in settled if s in run.outputs},
        states=dict(run.record.steps),
        args=dict(run.args),
        rounds=dict(run.rounds),
        on_fail_armed=sorted(run.on_fail_armed),
        epochs=dict(run.epochs),
        fingerprints={s: f for s, f in run.fingerprints.items() if s in settled},
    )


def commit(run: PlanRunState, label: str, by: str) -> Snapshot:
    """Commit the settled state under ``label`` (a re-commit replaces it, keeping its place)."""
    snap = snapshot(run, label, by)
    replaced = run.book.get(label) is not None
    run.book.commit(snap)
    run.record.event(
        "checkpoint.committed",
        label=label,
        by=by,
        settled=sum(1 for s in snap.states.values() if s == "settled"),
        replaced=replaced,
    )
    return snap


def apply_revert(run: PlanRunState, walk: list[Boundary], label: str) -> int:
    """Restore ``label``'s snapshot; returns the index of the first unsettled boundary."""
    snap = run.book.get(label)
    assert snap is not None  # the validator checked it, and labels are never dropped
    settled = {s for s, state in snap.states.items() if state == "settled"}
    run.outputs.clear()
    run.outputs.update(snap.outputs)
    run.record.steps = {s: "settled" if s in settled else "pending" for s in run.record.steps}
    run.args.clear()
    run.args.update(snap.args)
    run.rounds = dict(snap.rounds)
    run.on_fail_armed = set(snap.on_fail_armed)
    run.fingerprints = dict(snap.fingerprints)
    run.epochs = dict(snap.epochs)
    for step_id in run.record.steps:
        if step_id not in settled:
            run.epochs[step_id] = run.epochs.get(step_id, 0) + 1
    run.epoch += 1  # new gate tokens carry the new epoch
    gate_tokens = [g.token for g in run.gates.values()]
    run.retired_gate_tokens = (run.retired_gate_tokens + gate_tokens)[-MAX_RETIRED_TOKENS:]
    rotated = len(gate_tokens) + len(run.desk.rotate())
    run.gates.clear()
    run.decisions.clear()
    run.pending_pause = None
    run.need = None
    at = next((i for i, b in enumerate(walk) if b.step_id not in settled), len(walk))
    resumes_at = walk[at].step_id if at < len(walk) else None
    run.record.event(
        "checkpoint.reverted",
        label=label,
        restored=sorted(settled),
        resumes_at=resumes_at,
        rotated=rotated,
    )
    run.last_revert = RevertResult(
        label=label, restored=sorted(settled), resumes_at=resumes_at, rotated=rotated
    )
    run.control.revert_to = None
    run.control.reverts += 1
    run.running()
    return at


async def open_restore_point(run: PlanRunState, source: FromCheckpoint) -> tuple[str, str] | None:
    """Read ``--from RUN:LABEL`` on the worker; returns (code, message) when it cannot be used
    (``run.capability_required`` / ``run.capability_invalid`` without the source's read token,
    ``checkpoint-not-found``, ``input.invalid``): the run is refused before it opens, and a
    refused source leaves nothing of itself in this run's history."""
    try:
        point: RestorePoint = await workflow.execute_activity(
            READ_CHECKPOINT,
            ReadCheckpointInput(
                run_id=source.run_id,
                label=source.label,
                token=run.input.calls.read_tokens.get(source.run_id),
            ),
            result_type=RestorePoint,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=READ_RETRY,
        )
    except ActivityError as exc:
        cause = exc.cause
        if isinstance(cause, ApplicationError) and cause.type in _CAPABILITIES:
            return str(cause.type), cause.message
        message = cause.message if isinstance(cause, ApplicationError) else str(exc)
        code, _, rest = message.partition(": ")
        if code == str(Reason.CHECKPOINT_NOT_FOUND):
            return code, rest
        return INPUT_INVALID, f"from: {message}"
    run.restore_point = point
    run.record.event(
        "checkpoint.loaded", run=source.run_id, label=source.label, steps=sorted(point.steps)
    )
    return None


async def restore(
    run: PlanRunState, dispatcher: Dispatcher, plan: Plan, step: AnyStep
) -> tuple[bool, str | None]:
    """(restored, the step the walk jumps to): a step of the ``--from`` checkpoint is reused
    when its fingerprint matches now and its declared writes exist; else it runs live."""
    point = run.restore_point
    # Each step is offered its saved output once: a step the walk comes back to (a revise, a
    # route) runs live.
    saved = point.steps.pop(step.id, None) if point is not None else None
    if point is None or saved is None or saved.fingerprint is None:
        return False, None
    if step_fingerprint(run, dispatcher, plan, step) != saved.fingerprint:
        return False, None
    jump: str | None = None
    if isinstance(step, GateStep) and step.gate is not None:
        if saved.output != "approve":  # a kill or a revise re-decides: a person decides again
            return False, None
        jump = step.gate.on_approve
    if isinstance(step, PauseStep):
        key = step.pause.resume_arg
        if key in run.args and run.args[key] != saved.output:
            return False, None  # this run was given another value: it wins
        run.args[key] = saved.output
    if not await _writes_exist(dispatcher, plan, step):
        return False, None
    run.settle(step.id, saved.output)
    if isinstance(step, FanoutStep):
        for member in step.fanout.chain:
            run.record.steps[member] = "settled"
    if isinstance(step, RunStep):
        for child in plan.flows[step.flow].steps:
            run.record.steps[scoped(step.id, child.id)] = "settled"
    run.fingerprints[step.id] = saved.fingerprint
    run.resumed.append(step.id)
    if plan.training_pairs and isinstance(step, AgentStep) and isinstance(saved.output, str):
        await _backfill(run, dispatcher, plan, step, saved.output)
    run.settle_by_message(step.id, step.deps, resumed=True, source=f"{point.run_id}:{point.label}")
    return True, jump


async def _backfill(
    run: PlanRunState, dispatcher: Dispatcher, plan: Plan, step: AgentStep, output: str
) -> None:
    """A restored agent step is a training pair both sides of which are known: its prompt as
    this run would send it, the output restored (``capture_mode: backfill``, ``resumed``). The
    writer's key makes it at most once, however many runs restore it."""
    rendered = render(step.prompt, inputs=run.args, outputs=run.outputs, splice=defang)
    contract = dict(plan.contracts.get(step.out, {})) if step.out is not None else None
    upstream = run.outputs.get(step.deps[0]) if len(step.deps) == 1 else None
    prompt = assemble_prompt(step, rendered, contract=contract, upstream=upstream)
    await capture_pair(
        run, plan, step, dispatcher.models.get(step.id, ""), prompt=prompt, output=output,
        item=None, invocation="", mode="backfill", resumed=True,
    )  # fmt: skip


async def _writes_exist(dispatcher: Dispatcher, plan: Plan, step: AnyStep) -> bool:
    owners: list[Any] = [step]
    if isinstance(step, FanoutStep):
        owners = [plan.step(m) for m in step.fanout.chain]
    writes = sorted(
        {w for s in owners if isinstance(s, AgentStep | GateStep) for w in s.artifacts.writes}
    )
    if not writes:
        return True
    if dispatcher.workspace is None:
        return False
    found: WriteSnapshot = await workflow.execute_activity(
        SNAPSHOT_WRITES,
        PathsInput(workspace=dispatcher.workspace, paths=writes),
        result_type=WriteSnapshot,
        start_to_close_timeout=timedelta(seconds=60),
        retry_policy=WORKSPACE_RETRY,
    )
    return all(h is not None for h in found.hashes.values())


def _definition(step: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = step.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {k: v for k, v in dumped.items() if k not in _COSMETIC and not k.startswith("x-")}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
