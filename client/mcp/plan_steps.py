"""The plan tools for consumer steps and checkpoints: ``issuance``, ``step_done``,
``checkpoint``, ``revert`` (``ponder step-done | checkpoint | revert`` over MCP).

An MCP client can be a consumer: ``plan_run`` pauses ``awaiting_consumer`` with the issuances in
its answer; ``issuance`` gives the prompt exactly as the executor gets it and the contract;
``step_done`` answers with the update id ``step_done_id`` gives (a digest of the answer), as the
CLI does.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowQueryFailedError

from activities.errors import ConfigError
from client.mcp.args import CheckpointArgs, IssuanceArgs, RevertArgs, StepDoneArgs
from client.mcp.backend import Backend
from client.mcp.plans import _answer, _handle, _paused
from workflows.names import QUERY_ISSUANCE, UPDATE_CHECKPOINT, UPDATE_REVERT, UPDATE_STEP_DONE
from workflows.plan.checkpoints import CheckpointInput, CheckpointResult, RevertInput
from workflows.plan.consumer import IssuanceView, StepDoneInput, step_done_id

__all__ = ["checkpoint", "issuance", "revert", "step_done"]


async def issuance(backend: Backend, args: IssuanceArgs, progress: Any) -> dict[str, Any]:
    await _paused(backend, args.run_id)
    try:
        view: IssuanceView = await _handle(backend, args.run_id).query(
            QUERY_ISSUANCE, args.step, result_type=IssuanceView
        )
    except WorkflowQueryFailedError as exc:
        message = str(exc).removeprefix("unknown-step: ")
        raise ConfigError("unknown-step", message, fix="give a consumer step of the plan") from None
    return {"run_id": args.run_id, "kind": "plan", **view.model_dump(mode="json")}


async def step_done(backend: Backend, args: StepDoneArgs, progress: Any) -> dict[str, Any]:
    before = await _paused(backend, args.run_id)
    token = args.token
    if token is None:
        live = [i.token for i in before.issuances if i.step == args.step]
        if len(live) != 1:
            raise ConfigError(
                "stale-dispatch-token",
                f"{args.step!r} has {len(live)} live issuance(s)",
                fix="give the token of the one you answer (see the status tool)",
            )
        token = live[0]
    result: dict[str, Any] = {}
    for key in ("output", "failure", "usage", "telemetry"):
        value = getattr(args, key)
        if value is not None:
            result[key] = value
    answer = StepDoneInput(step=args.step, token=token, result=result)
    return await _answer(
        backend, args.run_id, UPDATE_STEP_DONE, answer, wait=args.wait, wait_s=args.timeout_s,
        progress=progress, before=before, update_id=step_done_id(answer),
    )  # fmt: skip


async def checkpoint(backend: Backend, args: CheckpointArgs, progress: Any) -> dict[str, Any]:
    await _paused(backend, args.run_id)
    # A refusal is typed with its plan reason (invalid-label ...): coded by client.failures.
    done: CheckpointResult = await _handle(backend, args.run_id).execute_update(
        UPDATE_CHECKPOINT, CheckpointInput(label=args.label), result_type=CheckpointResult
    )
    return {"run_id": args.run_id, "kind": "plan", **done.model_dump()}


async def revert(backend: Backend, args: RevertArgs, progress: Any) -> dict[str, Any]:
    before = await _paused(backend, args.run_id)
    return await _answer(
        backend, args.run_id, UPDATE_REVERT, RevertInput(label=args.label), wait=args.wait,
        wait_s=args.timeout_s, progress=progress, before=before,
    )  # fmt: skip
