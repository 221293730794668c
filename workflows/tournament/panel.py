"""Judging a batch of pairs with several calls each: both orders, or a judge panel.

Workflow-side (it awaits the calls); the rules are ``workflows.tournament.verdicts``. Every
call is one slot of the judge concurrency, and a pair's comparison row is recorded as soon as
its last call lands, so a cancelled run keeps the pairs it finished. Call slot ``s`` of pair
``i`` is call index ``i * calls_per_pair + s``: every call has its own key. Pipelined, a call
also holds a slot of its judge's provider.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.tournament import verdicts
    from workflows.tournament.calls import TournamentCalls
    from workflows.tournament.judge_parse import JudgeParseError, parse_judge_output
    from workflows.tournament.record import TournamentRecord
    from workflows.tournament.schedule import ScheduledPair
    from workflows.tournament.types import ComparisonRow

__all__ = ["judge_by_panel"]


async def judge_by_panel(
    calls: TournamentCalls,
    record: TournamentRecord,
    context: dict[str, str],
    phase: str,
    generation: int | None,
    pairs: list[ScheduledPair],
    first_index: int,
    ready: Callable[[ScheduledPair], Awaitable[None]] | None = None,
) -> list[ComparisonRow]:
    """Each pair by every judge of the run's panel, in one order or both; rows in pair order.

    ``ready(pair)`` (pipelined rounds) is awaited before each of the pair's calls starts."""
    input = calls.input
    per_pair = input.calls_per_pair
    landed: dict[int, list[verdicts.SlotResult | None]] = {}
    rows: dict[int, ComparisonRow] = {}

    async def call(index: int, pair: ScheduledPair, s: int, slot: verdicts.Slot) -> None:
        values = context | {
            "candidateA": record.candidates[slot.presented_a].text,
            "candidateB": record.candidates[slot.presented_b].text,
        }
        judged = await calls.until_valid(
            phase,
            index * per_pair + s,
            values=values,
            parse=parse_judge_output,
            errors=(JudgeParseError,),
            model=slot.judge,
        )
        done = landed.setdefault(index, [None] * per_pair)
        done[s] = verdicts.SlotResult(
            slot=slot,
            verdict=judged.value,
            model=judged.response.model,
            provider=judged.response.provider,
            attempts=judged.attempts,
            usage=judged.usage,
            raw_outputs=judged.raw_outputs,
        )
        results = [r for r in done if r is not None]
        if len(results) == per_pair:
            rows[index] = record.add_combined(
                phase,
                generation,
                index,
                pair,
                results,
                include_raw_outputs=input.include_raw_outputs,
            )

    panel, orders = input.judge_panel, input.judge_orders
    slots = [
        (first_index + i, pair, s, slot)
        for i, pair in enumerate(pairs)
        for s, slot in enumerate(
            verdicts.call_slots(pair, panel, orders, first_index + i if calls.balanced_panel else 0)
        )
    ]
    await calls.run_all(
        [functools.partial(call, *slot) for slot in slots],
        "judge",
        ready=[functools.partial(ready, pair) for _, pair, _, _ in slots] if ready else None,
        models=[slot.judge for *_, slot in slots],
    )
    return [rows[first_index + i] for i in range(len(pairs))]
