"""Where a workflow task's time goes in this process, activation by activation.

A workflow task, from the worker's side, is one activation handled on the event loop:

* **decode** — the SDK's payload visitors over the activation (codec, external storage);
* **activate** — the workflow code, run on a workflow thread (wall time; ``activate CPU`` is
  that thread's CPU time, so the difference is time spent waiting for the GIL);
* **encode** — the same visitors over the completion's commands;
* **complete RPC** — handing the completion to the SDK core, which answers once the server has
  taken the workflow task's result (``RespondWorkflowTaskCompleted``: the server persisting the
  new events);
* **rest** — the handler's wall time less the four above: waiting for the event loop (other
  activations, activity bodies) and for a workflow thread.

It wraps private functions of the Temporal Python SDK (``temporalio.worker._workflow`` and
``temporalio.bridge.worker``, as of temporalio 1.35), so it is a measuring instrument for
``tournament_overhead --activation-phases`` only, never part of a worker. The runs measured
must run one at a time: every activation is counted under the current ``label``.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from types import TracebackType
from typing import Any

import temporalio.bridge.worker as bridge_worker
import temporalio.worker._workflow as sdk_workflow

__all__ = ["PHASES", "ActivationPhases"]

PHASES = ("decode", "activate", "activate CPU", "encode", "complete RPC", "rest")


class ActivationPhases:
    """While entered, times every workflow activation of this process, under ``label``."""

    def __init__(self) -> None:
        self.label = ""
        self.times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self._saved: list[tuple[Any, str, Any]] = []

    def _add(self, phase: str, started: float, now: float | None = None) -> float:
        elapsed = ((now if now is not None else time.perf_counter()) - started) * 1e3
        self.times[self.label][phase].append(elapsed)
        return elapsed

    def __enter__(self) -> ActivationPhases:
        decode, encode = bridge_worker.decode_activation, bridge_worker.encode_completion
        handle = sdk_workflow._WorkflowWorker._handle_activation
        activate = sdk_workflow._RunningWorkflow.activate
        complete = bridge_worker.Worker.complete_workflow_activation
        phases = self
        inner: list[float] = []
        """This activation's decode, activate, encode and complete times: one activation at
        a time, so one list serves."""

        async def timed_decode(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = await decode(*args, **kwargs)
            inner.append(phases._add("decode", started))
            return result

        async def timed_encode(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            result = await encode(*args, **kwargs)
            inner.append(phases._add("encode", started))
            return result

        async def timed_complete(self: Any, completion: Any) -> None:
            started = time.perf_counter()
            await complete(self, completion)
            inner.append(phases._add("complete RPC", started))

        def timed_activate(self: Any, activation: Any) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return activate(self, activation)
            finally:
                inner.append(phases._add("activate", started))
                phases._add("activate CPU", cpu, time.thread_time())

        async def timed_handle(self: Any, activation: Any) -> None:
            inner.clear()
            started = time.perf_counter()
            await handle(self, activation)
            elapsed = (time.perf_counter() - started) * 1e3
            phases.times[phases.label]["rest"].append(elapsed - sum(inner))

        self._patch(bridge_worker, "decode_activation", timed_decode)
        self._patch(bridge_worker, "encode_completion", timed_encode)
        self._patch(bridge_worker.Worker, "complete_workflow_activation", timed_complete)
        self._patch(sdk_workflow._WorkflowWorker, "_handle_activation", timed_handle)
        self._patch(sdk_workflow._RunningWorkflow, "activate", timed_activate)
        return self

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def table(self, runs: dict[str, int]) -> str:
        """Per label: activations a run, then each phase's median and its sum a run (ms)."""
        head = f"{'mode':<32} {'tasks/run':>9}  " + "  ".join(f"{p:>16}" for p in PHASES)
        lines = [head, f"{'':<32} {'':>9}  " + "  ".join(f"{'median / run':>16}" for _ in PHASES)]
        for label, phases in self.times.items():
            count = runs.get(label, 1)
            cells = []
            for phase in PHASES:
                values = phases.get(phase, [])
                median = statistics.median(values) if values else 0.0
                cells.append(f"{median:>7.2f} / {sum(values) / count:>6.0f}")
            tasks = len(phases.get("rest", [])) / count
            lines.append(f"{label:<32} {tasks:>9.0f}  " + "  ".join(f"{c:>16}" for c in cells))
        return "\n".join(lines)
