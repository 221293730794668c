"""The tournament record reads rows back in schedule order, whatever order they landed in."""

from __future__ import annotations

from activities.model_types import ModelResponse, Usage
from workflows.tournament.record import TournamentRecord
from workflows.tournament.selection import Discarded
from workflows.tournament.types import ComparisonRow


def response(text: str) -> ModelResponse:
    return ModelResponse(text=text, model="m", provider="p")


def comparison(phase: str, index: int) -> ComparisonRow:
    return ComparisonRow(
        id=f"{phase}#{index}",
        phase=phase,
        generation=1,
        presented_a="a",
        presented_b="b",
        scheduled_a="a",
        scheduled_b="b",
        winner="A",
        confidence=None,
        critique_a="",
        critique_b="",
        model="m",
        provider="p",
        attempts=1,
        usage=Usage(),
    )


def test_candidates_and_comparisons_come_back_in_schedule_order() -> None:
    record = TournamentRecord(now=lambda: "t0")
    for cid in ("g0-c10", "g0-c2", "g0-c0"):
        record.add_candidate(cid, 0, "initial", None, "generated", response(cid))
    record.add_candidate("g1-m1", 1, "mutation", "g0-c2", "mutated", response("m1"))
    assert record.copy_elites(1, ["g0-c0"]) == ["g1-e0"]
    record.add_candidate("g1-m0", 1, "mutation", "g0-c0", "mutated", response("m0"))
    assert [c.id for c in record.candidates_in_order()] == [
        "g0-c0",
        "g0-c2",
        "g0-c10",
        "g1-e0",
        "g1-m0",
        "g1-m1",
    ]
    elite = record.candidates["g1-e0"]
    assert (elite.text, elite.created_at, elite.parent_id) == ("g0-c0", "t0", "g0-c0")

    for phase, index in (("judging:1", 2), ("judging:1", 10), ("final", 0), ("judging:1", 0)):
        record.comparisons.append(comparison(phase, index))
    assert [c.id for c in record.comparisons_in_order()] == [
        "judging:1#0",
        "judging:1#2",
        "judging:1#10",
        "final#0",
    ]
    assert [c.id for c in record.comparisons_in_order("final")] == ["final#0"]


def test_discard_and_events() -> None:
    record = TournamentRecord(now=lambda: "t1")
    record.add_candidate("g0-c0", 0, "initial", None, "generated", response("x"))
    record.discard([Discarded("g0-c0", "bottom_quartile")])
    assert record.candidates["g0-c0"].status == "discarded"
    assert record.candidates["g0-c0"].discard_reason == "bottom_quartile"
    record.commit_population(0, ["g0-c0"])
    record.event("custom", k=1)
    assert [(e.seq, e.type) for e in record.events] == [(1, "population.committed"), (2, "custom")]
