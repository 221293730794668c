"""Where a boundary runs: the plan's top level, or the body of a ``run`` step (a sub-flow).

A scope says what the steps in it read and where their outputs go: at the top level
``${input.x}`` is a run argument and outputs are the run's; in a body ``${input.x}`` is the
``with`` value and outputs are the body's own, keyed by child id, while the run records the
child under its scoped id ``<run step>/<child>`` (``status``, the trace, the result's outputs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.boundaries import AnyStep
    from workflows.plan.flows import scoped
    from workflows.plan.model import Plan
    from workflows.plan_run.state import PlanRunState

if TYPE_CHECKING:
    from workflows.plan_run.overlap import Overlap

__all__ = ["Scope"]


class Scope:
    def __init__(
        self,
        run: PlanRunState,
        plan: Plan,
        *,
        prefix: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        steps: Mapping[str, AnyStep] | None = None,
    ) -> None:
        self.run = run
        self.plan = plan
        self.prefix = prefix
        """The run step whose body this is (None: the top level)."""
        self._inputs = inputs
        self._steps: Mapping[str, AnyStep] = steps or {s.id: s for s in plan.steps}
        self.outputs: dict[str, Any] = run.outputs if prefix is None else {}
        self.pool: Overlap | None = None
        """A body walking beside other steps: its children join this shared reservation
        instead of opening the run's ledger alone (``overlap``)."""

    @property
    def inputs(self) -> Mapping[str, Any]:
        # The top level reads the run's arguments as they are now (a resume adds to them).
        return self.run.args if self._inputs is None else self._inputs

    def sid(self, step_id: str) -> str:
        return scoped(self.prefix, step_id)

    def step(self, step_id: str) -> AnyStep:
        return self._steps[step_id]

    def body(self) -> list[AnyStep]:
        """The scope's steps in plan order."""
        return list(self._steps.values())

    def settle(self, step_id: str, output: Any) -> None:
        self.outputs[step_id] = output
        if self.prefix is None:
            self.run.settle(step_id, output)
        else:
            self.run.settle(self.sid(step_id), output)  # the result shows children, scoped
