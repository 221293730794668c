"""``Ask``: one model call through Temporal, its answer written to the run directory."""

from __future__ import annotations

import json
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows import phases
    from workflows.activity_contracts import HEARTBEAT_TIMEOUT, WRITE_RUN_FILES, WriteRunFilesInput
    from workflows.ask_types import AskInput, AskResult
    from workflows.ledger.waits import LedgerRoom
    from workflows.model_calls import call_failure, call_model, failed_transport_retries
    from workflows.model_types import CallModelInput, ModelRequest
    from workflows.names import ASK, SIGNAL_LEDGER_ROOM
    from workflows.raw_input import NO_INPUT, decode_run_input, input_failure
    from workflows.run_ids import RUN_ID_INVALID, run_id_problem

__all__ = ["ASK_LEDGER_WAITS_PATCH", "LEDGER_WAIT_MEMO", "AskWorkflow"]

# A bad path is a bug, not a passing fault: do not retry it forever.
WRITE_RETRY_POLICY = RetryPolicy(maximum_attempts=10, non_retryable_error_types=["ValueError"])
ASK_LEDGER_WAITS_PATCH = "ask-ledger-waits"
"""Asks on a ledger recorded before it failed a refused call with ``ledger.spent``; now it waits."""
LEDGER_WAIT_MEMO = "ledger_wait"
"""The memo key an Ask sets while its shared ledger refuses its call (``{"ledger", "limit"}``):
an Ask has no query, and a description (``ponder ask``, ``ponder status``) needs no worker."""


@workflow.defn(name=ASK)
class AskWorkflow:
    @workflow.init
    def __init__(self, input: object = NO_INPUT, *extra: object) -> None:
        # Decoded here, raised from run: an exception in init would fail the task forever.
        self.input = decode_run_input(AskInput, input, extra)
        self.ledger_room = LedgerRoom(paused=self._ledger_paused, resumed=self._ledger_resumed)

    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> AskResult:
        if not isinstance(self.input, AskInput):
            raise input_failure(self.input)
        input = self.input
        run_id = workflow.info().workflow_id  # input.run_id, if given, is the same
        if (problem := run_id_problem(run_id)) is not None:  # no run directory to write to
            raise ApplicationError(problem, type=RUN_ID_INVALID, non_retryable=True)
        request = ModelRequest(
            model=input.model,
            prompt=input.question,
            system=input.system,
            temperature=input.temperature,
            max_output_tokens=input.max_output_tokens,
            base_url=input.base_url,
            json_mode=input.json_mode,
            role=input.role,
            seed=input.seed,
        )
        # Asked in the first task, and only of an Ask on a ledger: others record no marker.
        waits = input.calls.ledger is not None and workflow.patched(ASK_LEDGER_WAITS_PATCH)
        try:
            response = await call_model(
                CallModelInput(run_id=run_id, phase=phases.ASK, index=0, request=request),
                input.calls,
                ledger_room=self.ledger_room if waits else None,
            )
        except ActivityError as exc:
            # A domain failure writes its summary, then fails with the provider's code.
            code, message = call_failure(exc)
            failed = {
                "run_id": run_id,
                "status": "failed",
                "model": input.model,
                "error": f"{code}: {message}",
                "transport_retries": failed_transport_retries(exc),
                "started_at": workflow.info().start_time.isoformat(),
                "completed_at": workflow.now().isoformat(),
            }
            if not code.startswith("run."):  # a refused run directory takes no summary
                await self._write(run_id, {"summary.json": _json(failed)})
            raise ApplicationError(message, type=code, non_retryable=True) from None
        summary: dict[str, object] = {
            "run_id": run_id,
            "status": "completed",
            "model": input.model,
            "answered_by": f"{response.provider}:{response.model}",  # input.model may be an alias
            "provider": response.provider,
            "simulated": response.simulated,
            "usage": response.usage.model_dump(),
            "usd": response.usd,
            "latency_ms": response.latency_ms,
            "transport_retries": response.transport_retries,
            "started_at": workflow.info().start_time.isoformat(),
            "completed_at": workflow.now().isoformat(),
        }
        paths = await self._write(
            run_id, {"artifacts/answer.txt": response.text, "summary.json": _json(summary)}
        )
        return AskResult(run_id=run_id, answer_path=paths[0], response=response)

    @workflow.signal(name=SIGNAL_LEDGER_ROOM)
    def ledger_room_signal(self, raw: RawValue = NO_INPUT) -> None:
        """The run's shared ledger has room again: its call goes on."""
        self.ledger_room.room()

    async def _ledger_paused(self, ledger: str, limit: str) -> None:
        workflow.upsert_memo({LEDGER_WAIT_MEMO: {"ledger": ledger, "limit": limit}})

    def _ledger_resumed(self, ledger: str) -> None:
        workflow.upsert_memo({LEDGER_WAIT_MEMO: None})  # None removes the key

    async def _write(self, run_id: str, files: dict[str, str]) -> list[str]:
        return await workflow.execute_activity(
            WRITE_RUN_FILES,
            WriteRunFilesInput(
                run_id=run_id, files=files, chain=workflow.info().first_execution_run_id
            ),
            result_type=list[str],
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,  # a killed worker: retried within seconds
            retry_policy=WRITE_RETRY_POLICY,
        )


def _json(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"
