"""How the worker's CEL evaluators are shared between runs: the pure fair share (least served run
first, a budget per run, bounded memory) and the pool itself with real evaluator processes (an
innocent request waits for one costly expression, not for a costly request; a run past its
budget is refused without an evaluator; a request gives up after its queue bound; a cancelled
waiter leaves nothing behind).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from activities.plan.cel import CelEvaluator
from activities.plan.cel_share import FairShare

# Each iteration compares two 20,000-item lists (~40 ms): ``SLOW`` takes ~0.2 s, under the
# 2 s bound and the step meter, and is charged to its run.
SLOW = "input.l.exists(x, input.a == input.b)"
SLOW_VALUES = {"input": {"a": [1] * 20_000, "b": [1] * 19_999 + [2], "l": list(range(5))}}


def test_the_least_served_run_goes_first_then_the_longest_waiting() -> None:
    share: FairShare[str] = FairShare(budget_seconds=10)
    share.charge("busy", 5.0)
    share.enqueue("busy", "b1")
    share.enqueue("busy", "b2")
    share.enqueue("new", "n1")
    share.enqueue("other", "o1")
    share.enqueue("new", "n2")
    assert share.waiting == 5
    assert [share.pop() for _ in range(6)] == ["n1", "o1", "n2", "b1", "b2", None]
    share.enqueue("busy", "b3")
    share.remove("busy", "b3")
    share.remove("ghost", "x")
    assert share.pop() is None and share.waiting == 0


def test_a_run_past_its_budget_is_exhausted_and_only_that_run() -> None:
    share: FairShare[str] = FairShare(budget_seconds=2)
    share.charge("costly", 1.5)
    assert not share.exhausted("costly")
    share.charge("costly", 0.6)
    share.charge("innocent", -3.0)  # a clock step back never credits a run
    assert share.exhausted("costly") and not share.exhausted("innocent")
    assert share.spent("innocent") == 0.0


def test_runs_are_forgotten_least_recently_used_first_never_while_waiting() -> None:
    share: FairShare[str] = FairShare(budget_seconds=1, max_runs=3)
    share.charge("old", 5.0)
    share.enqueue("old", "waits")
    for run in ("a", "b", "c", "d"):
        share.charge(run, 5.0)
    assert share.exhausted("old")  # waiting: remembered past the bound
    assert not share.exhausted("a") and share.exhausted("d")
    assert share.pop() == "waits"
    share.charge("e", 5.0)
    assert not share.exhausted("old") and share.runs == 3


@asynccontextmanager
async def pool(size: int = 1, **options: float) -> AsyncIterator[CelEvaluator]:
    evaluator = CelEvaluator(size=size, **options)  # type: ignore[arg-type]
    try:
        # Warm: start-up is not what is measured.
        await asyncio.gather(*(evaluator.evaluate(["true"], {}) for _ in range(size)))
        yield evaluator
    finally:
        await evaluator.close()


async def test_an_innocent_request_waits_for_one_costly_expression_not_a_costly_request() -> None:
    async with pool(size=2, budget_seconds=100) as evaluator:
        cheaper = {"input": {**SLOW_VALUES["input"], "l": list(range(2))}}  # ~0.1 s each
        costly = [
            asyncio.create_task(evaluator.evaluate([SLOW] * 48, cheaper, run=f"costly-{n}"))
            for n in range(2)
        ]
        await asyncio.sleep(0.8)
        began = time.monotonic()
        innocent = await evaluator.evaluate(["1 + 1"], {}, run="innocent")
        waited = time.monotonic() - began
        assert innocent.outcomes[0].value == 2
        # One costly expression at most, never a whole costly request (~5 s each).
        assert not all(task.done() for task in costly), waited
        assert waited < 4.0, waited
        for task in costly:
            assert all(o.value is not True for o in (await task).outcomes)
        spent = evaluator.share.spent
        assert spent("innocent") < 0.5 < min(spent("costly-0"), spent("costly-1"))


async def test_a_run_past_its_budget_fails_too_costly_without_an_evaluator() -> None:
    async with pool(budget_seconds=1.0) as evaluator:
        cheaper = {"input": {**SLOW_VALUES["input"], "l": list(range(2))}}  # ~0.1 s each
        first = await evaluator.evaluate([SLOW] * 40, cheaper, run="costly")
        flags = [o.too_costly for o in first.outcomes]
        assert flags[0] is False and flags[-1] is True, flags
        assert flags == sorted(flags)  # evaluated, then refused
        assert "used its 1 s of expression evaluation" in (first.outcomes[-1].error or "")
        started = evaluator.started
        again = await evaluator.evaluate(["1 + 1"], {}, run="costly")
        assert again.outcomes[0].too_costly and evaluator.started == started
        other = await evaluator.evaluate(["1 + 1"], {}, run="other")
        assert other.outcomes[0].value == 2


async def test_a_request_gives_up_after_its_queue_bound_and_a_cancelled_waiter_leaves() -> None:
    async with pool(queue_seconds=0.5) as evaluator:
        await evaluator.evaluate(["true"], {}, run="served")  # spent > 0: the other goes first
        longer = {"input": {**SLOW_VALUES["input"], "l": list(range(25))}}  # ~1 s
        holding = asyncio.create_task(evaluator.evaluate([SLOW], longer, run="holder"))
        await asyncio.sleep(0.1)
        gave_up = await evaluator.evaluate(["1 + 1"], {}, run="served")
        assert "no evaluator was free within 0.5 s" in (gave_up.outcomes[0].error or "")
        waiter = asyncio.create_task(evaluator.evaluate(["2 + 2"], {}, run="gone"))
        await asyncio.sleep(0.05)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert evaluator.share.waiting == 0
        assert (await holding).outcomes[0].value is not True
