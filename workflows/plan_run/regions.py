"""Fan-out regions (docs/plans.md): the first ``max_fanout`` items (after dedup) run their
chain, ``concurrency`` at a time; a failed branch is null; the join (``all`` | ``any`` |
``quorum:N``) decides, and an unsatisfied one carries the first failing branch's reason by item
index, not by completion time. With ``isolation: worktree`` each item runs in its own git
worktree and the joined region merges and lands its items' patches (``worktrees``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.plan.boundaries import MAX_CONCURRENCY, activated_items
    from workflows.plan.boundaries import lanes as branches_at_once
    from workflows.plan.checkpoints import Reverted
    from workflows.plan.joins import Branch, join, parse_join
    from workflows.plan.model import AgentStep, FanoutStep, Plan
    from workflows.plan.prompts import count_key
    from workflows.plan.reasons import RUN_FATAL, Reason
    from workflows.plan.refs import RefError, extract_json, resolve, whole_reference
    from workflows.plan.run_record import PlanFailure
    from workflows.plan_run.dispatch import Dispatcher, left_the_recording
    from workflows.plan_run.routes import skipped_read
    from workflows.plan_run.scope import Scope
    from workflows.plan_run.state import PlanRunState
    from workflows.plan_run.worktrees import RegionWorktrees, isolated

__all__ = ["SERIAL_DEFAULT_PATCH", "region", "region_items"]

SERIAL_DEFAULT_PATCH = "plan-fanout-serial-default"


def _lanes(step: FanoutStep, items: int) -> int:
    """Branches at once (``boundaries.lanes``). With neither ``concurrency`` nor
    ``max_fanout`` the items run one at a time, as in the reference; histories from before
    that rule ran them all at once, and replay so."""
    unset = step.fanout.concurrency is None and step.fanout.max_fanout is None
    if unset and items > 1 and not workflow.patched(SERIAL_DEFAULT_PATCH):
        return min(items, MAX_CONCURRENCY)
    return branches_at_once(step, items)


def region_items(run: PlanRunState, step: FanoutStep) -> list[Any]:
    """The activated items: ``over`` (a list, or a reference to an array output), deduplicated
    and capped at ``max_fanout``."""
    over = step.fanout.over
    if isinstance(over, str):
        ref = whole_reference(over)
        try:
            if ref is None:
                raise RefError(f"{over!r} is not one reference")
            value = resolve(ref, inputs=run.args, outputs=run.outputs)
            if isinstance(value, str):
                value = extract_json(value)
        except (RefError, ValueError) as exc:
            detail = skipped_read(run, Scope(run, run.plan), [over]) if run.plan else None
            raise PlanFailure(
                Reason.MALFORMED_OUTPUT, f"{step.id}.fanout.over: {detail or exc}", step=step.id
            ) from None
        if not isinstance(value, list):
            raise PlanFailure(
                Reason.MALFORMED_OUTPUT,
                f"{step.id}.fanout.over: {over} is a {type(value).__name__}, not a list",
                step=step.id,
            )
        over = value
    return activated_items(over, dedup=step.fanout.dedup, max_fanout=step.fanout.max_fanout)


async def region(
    run: PlanRunState, dispatcher: Dispatcher, plan: Plan, step: FanoutStep, items: list[Any]
) -> None:
    chain = [plan.step(m) for m in step.fanout.chain]
    lanes = asyncio.Semaphore(_lanes(step, len(items)))
    # Every branch is caused by what the region depends on (as in the reference); a later
    # chain member also by the member before it in its branch.
    region_causes = tuple(run.record.causes(step.deps))
    run.record.event("region.opened", caused_by=list(region_causes), step=step.id, items=len(items))
    trees = RegionWorktrees(run, dispatcher, step, items) if isolated(step) else None
    if trees is not None:
        await trees.open()

    async def branch(index: int, item: Any) -> Branch:
        async with lanes:
            local = dict(run.outputs)
            value: Any = None
            causes = region_causes
            # Isolated: the item's chain runs in its own worktree (a failure to make one is
            # run-fatal, so it fails the region below).
            at = dispatcher if trees is None else await trees.enter(index)
            try:
                for member in chain:
                    assert isinstance(member, AgentStep)
                    value = await at.invoke(
                        member,
                        inputs=run.args,
                        outputs=local,
                        item=item,
                        item_index=index,
                        causes=causes,
                    )
                    local[member.id] = value
                    previous = at.settled_at.get(count_key(member.id, index))
                    causes = region_causes + ((previous,) if previous is not None else ())
            except PlanFailure as exc:
                if trees is not None:
                    await trees.leave(index, ok=False)
                if left_the_recording(exc):  # no join absorbs it: the run fails with the miss
                    return Branch(False, None, exc.reason, exc.detail, cause=exc.cause)
                return Branch(False, None, exc.reason, exc.detail)
            except Reverted as exc:  # every branch ends before the revert unwinds the region
                if trees is not None:
                    await trees.leave(index, ok=False)
                reverted.append(exc)
                return Branch(False, None, None, "reverted")
            if trees is not None:
                await trees.leave(index, ok=True)
            return Branch(True, value)

    async def guarded(index: int, item: Any) -> Branch:
        try:
            return await branch(index, item)
        except PlanFailure as exc:  # the worktree itself failed: never absorbed by the join
            return Branch(False, None, exc.reason, exc.detail, cause=exc.cause)

    reverted: list[Reverted] = []
    tasks = [asyncio.create_task(guarded(i, item)) for i, item in enumerate(items)]
    branches = list(await asyncio.gather(*tasks))
    if reverted:
        raise reverted[0]
    for b in branches:
        # A chain member spends in the fan-out's ledger: that running out fails the region.
        fatal = (
            b.reason in RUN_FATAL or b.reason == Reason.STEP_BUDGET_EXHAUSTED or b.cause is not None
        )
        if not b.ok and b.reason is not None and fatal:
            run.record.steps[step.id] = "failed"
            raise PlanFailure(b.reason, b.detail, step=step.id, cause=b.cause)
    outcome = join(parse_join(step.fanout.join), branches)
    run.record.event(
        "region.joined",
        step=step.id,
        ok=outcome.ok,
        settled=outcome.settled,
        first_failure=outcome.first_failure,
    )
    for member in step.fanout.chain:
        run.record.steps[member] = "settled" if outcome.settled else "failed"
    if not outcome.ok:
        run.record.steps[step.id] = "failed"
        raise PlanFailure(Reason.JOIN_UNSATISFIED, f"{step.id}: {outcome.detail}", step=step.id)
    if trees is not None:  # the join held: merge in item order, land once
        await trees.merge_and_land(branches)
    run.settle(step.id, outcome.values)
