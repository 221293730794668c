"""The baseline of the plan benchmark: a workflow that awaits N bare ``call_model`` activities
one after another, nothing else. Its own module, importing only what a workflow may, so it runs
in the same sandbox as the real worker's workflows (and unsandboxed, for comparison)."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.call_options import CallOptions
    from workflows.model_calls import call_model
    from workflows.model_types import CallModelInput, ModelRequest

__all__ = ["BARE_CALLS", "MODEL", "BareCalls", "BareInput"]

BARE_CALLS = "BenchBarePlanCalls"
MODEL = "sim:default"


@dataclass
class BareInput:
    run_id: str
    calls: int


@workflow.defn(name=BARE_CALLS)
class BareCalls:
    @workflow.run
    async def run(self, input: BareInput) -> int:
        for index in range(input.calls):
            request = ModelRequest(model=MODEL, prompt=f"step {index}", role="plan")
            call = CallModelInput(run_id=input.run_id, phase="bench", index=index, request=request)
            await call_model(call, CallOptions())
        return input.calls
