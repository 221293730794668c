"""``iterate: {max, until}`` (docs/plans.md, "Expressions, ensure, iterate and set"): an agent step
re-run until ``until``.

Workflow code. Each iteration is a whole attempt cycle with its own ``retry`` (iterations do not
eat each other's attempts); ``until`` runs once the contract and ensures pass, with
``iteration`` bound (1-based). Holds: the step settles with that output. Not: ``iterate.next``,
and the next iteration's prompt is the step's own prompt plus why, and the previous output
(defanged). The ``max``-th failing, or an output identical to the previous iteration's (a
deterministic ``until`` cannot change its mind), exhausts the step: ``iterate-exhausted``, which
the walk routes to ``on_fail`` like any step failure. All of it is one boundary, reserved as
``w x max x (1 + judged)`` invocations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.model import AgentStep
    from workflows.plan.predicates import AttemptScope, iteration_prompt, result_of
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.checks import until_holds

if TYPE_CHECKING:
    from workflows.plan_run.dispatch import Dispatcher

__all__ = ["iterate"]


async def iterate(
    dispatcher: Dispatcher,
    step: AgentStep,
    sid: str,
    prompt: str,
    contract: Mapping[str, str] | None,
    scope: AttemptScope,
) -> str:
    spec = step.iterate
    assert spec is not None
    asked = prompt
    previous: str | None = None
    for iteration in range(1, spec.max + 1):
        here = dataclasses.replace(scope, iteration=iteration)
        text = await dispatcher.attempts(step, sid, asked, contract, here)
        holds, reason = await until_holds(
            dispatcher, step, result=result_of(step, text), scope=here
        )
        if holds:
            dispatcher.record.event("iterate.done", step=sid, iteration=iteration)
            return text
        repeated = previous is not None and text == previous
        if iteration == spec.max or repeated:
            why = (
                "its output is identical to the previous iteration's"
                if repeated
                else f"{spec.max} of {spec.max} iterations did not satisfy it"
            )
            raise PlanFailure(
                Reason.ITERATE_EXHAUSTED,
                f"{sid}: until {spec.until} is not satisfied ({reason}): {why}",
                step=sid,
            )
        dispatcher.record.event(
            "iterate.next", step=sid, iteration=iteration, of=spec.max, reason=reason
        )
        previous = text
        asked = iteration_prompt(
            prompt, done=iteration, iterations=spec.max, until=spec.until, reason=reason,
            output=text,
        )  # fmt: skip
    raise AssertionError("unreachable: the last iteration returns or raises")
