"""The baseline of the plan benchmark: a workflow that awaits N bare ``call_model`` activities,
one after another or ``lanes`` at a time, nothing else. Its own module, importing only what a
workflow may, so it runs in the same sandbox as the real worker's workflows (and unsandboxed,
for comparison)."""

from __future__ import annotations

import asyncio
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
    lanes: int = 1


@workflow.defn(name=BARE_CALLS)
class BareCalls:
    @workflow.run
    async def run(self, input: BareInput) -> int:
        lanes = asyncio.Semaphore(max(1, input.lanes))

        async def one(index: int) -> None:
            async with lanes:
                request = ModelRequest(model=MODEL, prompt=f"step {index}", role="plan")
                call = CallModelInput(
                    run_id=input.run_id, phase="bench", index=index, request=request
                )
                await call_model(call, CallOptions())

        if input.lanes <= 1:
            for index in range(input.calls):
                await one(index)
        else:
            await asyncio.gather(*(one(index) for index in range(input.calls)))
        return input.calls
