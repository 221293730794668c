"""Plan rules of features whose run-time models live elsewhere: consumer dispatch
(``workflows.plan.consumer``), checkpoints (``workflows.plan.checkpoints``) and worktree fan-outs
(``workflows.plan.worktrees``).

Pure. Here, not beside those models, so that validating a plan (``ponder plan validate``) does
not build the models of updates, records and activity inputs it never uses; the feature modules
re-export these names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workflows.plan.errors import PlanError
from workflows.plan.model import FanoutStep, Plan

__all__ = ["MAX_CHECKPOINTS", "checkpoint_errors", "consumer_errors", "isolated_fanouts"]

MAX_CHECKPOINTS = 50


def consumer_errors(steps: Sequence[Any], owner: Mapping[str, int]) -> list[PlanError]:
    """``consumer.not_allowed``: ``dispatch: consumer`` on a gate (its verdict is the engine's
    to parse), or on a chain member of a fan-out isolated in worktrees (an external executor
    does not run in the item's worktree). ``steps`` as the rules see them (None: unparsed)."""
    errors = []
    for i, step in enumerate(steps):
        if step is None or getattr(step, "dispatch", "engine") != "consumer":
            continue
        if step.kind == "gate":
            errors.append(
                PlanError(
                    "consumer.not_allowed",
                    f"steps[{i}].dispatch",
                    "a gate's verdict is parsed by the engine, so its invocation cannot be "
                    "handed to an external executor; fix: remove dispatch: consumer (or make it "
                    "an agent step before the gate)",
                )
            )
            continue
        fan = owner.get(step.id)
        spec = getattr(steps[fan], "fanout", None) if fan is not None else None
        if getattr(spec, "isolation", "none") == "worktree":
            errors.append(
                PlanError(
                    "consumer.not_allowed",
                    f"steps[{i}].dispatch",
                    f"{step.id!r} is a chain member of a worktree-isolated fan-out, whose items "
                    "run in worktrees only the engine's executors see; fix: use isolation: none "
                    "or dispatch: engine",
                )
            )
    return errors


def checkpoint_errors(
    steps: Sequence[Any], owner: Mapping[str, int], *, top_level: bool = True
) -> list[PlanError]:
    """Labels are unique, on top-level steps (a chain member settles inside its region, a flow
    child inside its run step), and at most ``MAX_CHECKPOINTS`` (``steps`` as the rules see
    them; None: unparsed; ``top_level`` False: a flow's body)."""
    errors = []
    seen: dict[str, int] = {}
    for i, step in enumerate(steps):
        label = getattr(step, "checkpoint", None) if step is not None else None
        if label is None:
            continue
        path = f"steps[{i}].checkpoint"
        if not top_level or (step.id in owner and owner[step.id] != i):
            where = "fan-out" if top_level else "run step"
            errors.append(
                PlanError(
                    "checkpoint.not_top_level",
                    path,
                    f"{step.id!r} settles inside its {where}, which is what a checkpoint can "
                    f"commit; fix: put the checkpoint on the {where}",
                )
            )
            continue
        if label in seen:
            errors.append(
                PlanError(
                    "checkpoint.duplicate",
                    path,
                    f"label {label!r} is already steps[{seen[label]}]'s; a revert to it would be "
                    "ambiguous; fix: give each checkpoint its own label",
                )
            )
            continue
        seen[label] = i
        if len(seen) == MAX_CHECKPOINTS + 1:
            errors.append(
                PlanError(
                    "checkpoint.too_many",
                    path,
                    f"a plan declares at most {MAX_CHECKPOINTS} checkpoint labels; fix: keep "
                    "the ones a revert needs",
                )
            )
    return errors


def isolated_fanouts(plan: Plan) -> list[str]:
    """The ids of the plan's fan-outs that run in worktrees (they need a git workspace)."""
    return [
        s.id for s in plan.steps if isinstance(s, FanoutStep) and s.fanout.isolation == "worktree"
    ]
