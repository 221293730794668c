"""``Ask``: one model call through Temporal, its answer written to the run directory."""

from __future__ import annotations

import json
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.model_types import CallModelInput, ModelRequest
    from activities.run_store import WRITE_RUN_FILES, WriteRunFilesInput
    from workflows.ask_types import AskInput, AskResult
    from workflows.model_calls import call_model
    from workflows.names import ASK

__all__ = ["AskWorkflow"]


@workflow.defn(name=ASK)
class AskWorkflow:
    @workflow.run
    async def run(self, input: AskInput) -> AskResult:
        run_id = input.run_id or workflow.info().workflow_id
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
        response = await call_model(
            CallModelInput(run_id=run_id, phase="ask", index=0, request=request)
        )
        summary = {
            "run_id": run_id,
            "status": "completed",
            "model": input.model,
            "provider": response.provider,
            "simulated": response.simulated,
            "usage": response.usage.model_dump(),
            "usd": response.usd,
            "latency_ms": response.latency_ms,
            "transport_retries": response.transport_retries,
            "completed_at": workflow.now().isoformat(),
        }
        paths = await workflow.execute_activity(
            WRITE_RUN_FILES,
            WriteRunFilesInput(
                run_id=run_id,
                files={
                    "artifacts/answer.txt": response.text,
                    "summary.json": json.dumps(summary, indent=2, sort_keys=True) + "\n",
                },
            ),
            result_type=list[str],
            start_to_close_timeout=timedelta(seconds=60),
        )
        return AskResult(run_id=run_id, answer_path=paths[0], response=response)
