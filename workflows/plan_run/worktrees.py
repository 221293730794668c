"""Worktree-isolated fan-out (docs/plans.md, "Worktree fan-out"), from workflow code.

    preflight: ``worktree-unavailable`` (no git, or the workspace is not in a git work tree)
    region start: base -- a commit of the workspace through a temporary index
    each item: worktree add (``worktree.created``) -> its chain, with the worktree as the
        workspace -> finish: its patch into the run directory (``worktree.patch``, sha256 in
        history) and the worktree removed (a failed item keeps no patch)
    the join decides first (``regions``): unsatisfied, nothing is merged
    merge: the succeeded items' patches in item order in a scratch worktree; the first that
        does not apply is ``worktree.conflict`` and the run fails ``worktree-merge-conflict``
    land: once, onto the workspace's files, if they still equal the base (``worktree.merged``)

Git runs only in the activities (``activities.plan.worktrees``); what they return (ids,
digests, outcomes) is all that enters history. Nothing touches the workspace before the land,
so a failed join or merge leaves it as it was.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.activity_contracts import HEARTBEAT_TIMEOUT
    from workflows.plan.activity_contracts import (
        WORKTREE_ADD,
        WORKTREE_BASE,
        WORKTREE_FINISH,
        WORKTREE_LAND,
        WORKTREE_MERGE,
        WORKTREE_PROBE,
    )
    from workflows.plan.joins import Branch
    from workflows.plan.model import FanoutStep, Plan
    from workflows.plan.reasons import Reason
    from workflows.plan.run_record import PlanFailure
    from workflows.plan.worktrees import (
        MAX_PATCH_BYTES,
        ItemPatch,
        WorktreeAdded,
        WorktreeBase,
        WorktreeItemInput,
        WorktreeLanded,
        WorktreeLandInput,
        WorktreeMerged,
        WorktreeMergeInput,
        WorktreePatch,
        WorktreeProbeInput,
        WorktreeRegionInput,
        isolated_fanouts,
    )
    from workflows.plan_run.dispatch import Dispatcher
    from workflows.plan_run.state import PlanRunState

__all__ = ["RegionWorktrees", "check_worktrees", "isolated"]

GIT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_attempts=3
)
"""A git command that failed is tried twice more (a lock held for a moment); refusals
(outside the roots, another run's directory) are never retried."""
GIT_ACTIVITY_TIMEOUT = timedelta(minutes=30)
_T = TypeVar("_T")


def isolated(step: FanoutStep) -> bool:
    return step.fanout.isolation == "worktree"


def _why(exc: ActivityError) -> str:
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        return f"{cause.type}: {cause.message}"
    return str(cause or exc)


def _code(exc: ActivityError) -> str | None:
    """The activity's own error type (``worktree.tampered``, ...), kept as the run's cause."""
    cause = exc.cause
    return cause.type if isinstance(cause, ApplicationError) else None


async def _git(name: str, arg: Any, result_type: type[_T]) -> _T:
    result: _T = await workflow.execute_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=GIT_ACTIVITY_TIMEOUT,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,  # a killed worker: retried within seconds
        retry_policy=GIT_RETRY,
    )
    return result


async def check_worktrees(plan: Plan, workspace: str | None) -> None:
    """Preflight, after the paths: a plan with a worktree fan-out needs git and a workspace in
    a git work tree (asked only then, so other plans run the commands they always did)."""
    fanouts = isolated_fanouts(plan)
    if not fanouts:
        return
    named = ", ".join(fanouts)
    if workspace is None:
        raise PlanFailure(
            Reason.WORKTREE_UNAVAILABLE,
            f"fan-out {named} runs in git worktrees but the run has no workspace; "
            "fix: --workspace DIR (in a git work tree)",
        )
    problems = await _git(WORKTREE_PROBE, WorktreeProbeInput(workspace=workspace), list[str])
    if problems:
        raise PlanFailure(Reason.WORKTREE_UNAVAILABLE, f"fan-out {named}: " + "; ".join(problems))


class RegionWorktrees:
    """One region's worktrees: the base, each item's worktree and patch, the merge, the land."""

    def __init__(
        self, run: PlanRunState, dispatcher: Dispatcher, step: FanoutStep, items: list[Any]
    ) -> None:
        assert dispatcher.workspace is not None  # preflight refused a run without one
        self.run = run
        self.items = items
        self.dispatcher = dispatcher
        self.step = step
        self.region = WorktreeRegionInput(
            run_id=run.run_id,
            chain=workflow.info().first_execution_run_id,
            workspace=dispatcher.workspace,
            step=step.id,
        )
        self.base: WorktreeBase | None = None
        self.patches: dict[int, WorktreePatch] = {}

    def _fail(self, reason: Reason, detail: str) -> PlanFailure:
        self.run.record.steps[self.step.id] = "failed"
        return PlanFailure(reason, f"{self.step.id}: {detail}", step=self.step.id)

    async def open(self) -> None:
        """The base: the workspace as it is now, untracked files included."""
        try:
            self.base = await _git(WORKTREE_BASE, self.region, WorktreeBase)
        except ActivityError as exc:
            raise self._fail(
                Reason.WORKTREE_UNAVAILABLE, f"no base commit of the workspace: {_why(exc)}"
            ) from None

    def _item(self, index: int, *, capture: bool = True) -> WorktreeItemInput:
        assert self.base is not None
        return WorktreeItemInput(
            **self.region.model_dump(), item=index, base=self.base, capture=capture
        )

    async def enter(self, index: int) -> Dispatcher:
        """The item's worktree, and a dispatcher whose workspace it is."""
        try:
            added = await _git(WORKTREE_ADD, self._item(index), WorktreeAdded)
        except ActivityError as exc:
            raise PlanFailure(
                Reason.WORKTREE_UNAVAILABLE,
                f"{self.step.id}: item {index}: git worktree add failed: {_why(exc)}",
                step=self.step.id,
            ) from None
        assert self.base is not None
        self.run.record.event(
            "worktree.created", step=self.step.id, item=index, base=self.base.commit
        )
        return self.dispatcher.in_workspace(added.workspace)

    async def leave(self, index: int, *, ok: bool) -> None:
        """A succeeded item's patch is kept (and traced); the worktree goes either way."""
        try:
            patch = await _git(WORKTREE_FINISH, self._item(index, capture=ok), WorktreePatch)
        except ActivityError as exc:
            raise PlanFailure(
                Reason.WORKTREE_UNAVAILABLE,
                f"{self.step.id}: item {index}: its patch could not be taken: {_why(exc)}",
                step=self.step.id,
                cause=_code(exc),
            ) from None
        if not ok:
            return
        self.patches[index] = patch
        self.run.record.event(
            "worktree.patch",
            step=self.step.id,
            item=index,
            sha256=patch.sha256,
            bytes=patch.bytes,
            files=patch.files,
            over_ceiling=patch.over_ceiling,
        )

    async def merge_and_land(self, branches: list[Branch]) -> None:
        """Merge the succeeded items' patches in item order, then land the result once."""
        assert self.base is not None
        order = [i for i, b in enumerate(branches) if b.ok]
        for i in order:
            if self.patches[i].over_ceiling:
                self._conflict(i, f"its patch is over the {MAX_PATCH_BYTES:,}-byte ceiling")
        patches = [ItemPatch(item=i, sha256=self.patches[i].sha256 or "") for i in order]
        try:
            merged = await _git(
                WORKTREE_MERGE,
                WorktreeMergeInput(**self.region.model_dump(), base=self.base, patches=patches),
                WorktreeMerged,
            )
        except ActivityError as exc:
            raise self._fail(Reason.WORKTREE_MERGE_CONFLICT, f"merge failed: {_why(exc)}") from None
        if not merged.ok or merged.subtree is None or merged.sha256 is None:
            self._conflict(merged.conflict_item or 0, merged.detail)
        assert merged.subtree is not None and merged.sha256 is not None
        land = WorktreeLandInput(
            **self.region.model_dump(),
            base=self.base,
            merged_subtree=merged.subtree,
            sha256=merged.sha256,
        )
        try:
            landed = await _git(WORKTREE_LAND, land, WorktreeLanded)
        except ActivityError as exc:
            raise self._fail(
                Reason.WORKTREE_MERGE_CONFLICT, f"landing failed: {_why(exc)}"
            ) from None
        if landed.outcome == "conflict":
            self._conflict(None, landed.detail)
        self.run.record.event(
            "worktree.merged",
            step=self.step.id,
            items=order,
            sha256=merged.sha256,
            bytes=merged.bytes,
            landed=landed.outcome,
        )

    def _conflict(self, item: int | None, detail: str) -> None:
        self.run.record.event("worktree.conflict", step=self.step.id, item=item, detail=detail)
        if item is None:
            raise self._fail(Reason.WORKTREE_MERGE_CONFLICT, f"landing: {detail}")
        value = json.dumps(self.items[item], ensure_ascii=False, default=str)
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise self._fail(
            Reason.WORKTREE_MERGE_CONFLICT,
            f"item {item} ({shown}): {detail}; nothing was applied to the workspace",
        )
