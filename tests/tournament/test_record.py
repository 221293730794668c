"""The tournament record reads rows back in schedule order, whatever order they landed in."""

from __future__ import annotations

from activities.model_types import ModelResponse, Usage
from workflows.budget import Budget, BudgetLimits
from workflows.tournament.bradley_terry import LeaderboardRow
from workflows.tournament.judge_parse import JudgeVerdict
from workflows.tournament.record import TournamentRecord
from workflows.tournament.schedule import ScheduledPair
from workflows.tournament.selection import Discarded
from workflows.tournament.types import ComparisonRow, GivenCandidate, TournamentInput


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


def test_rows_are_built_from_what_the_calls_returned() -> None:
    record = TournamentRecord(now=lambda: "t2")
    given = [GivenCandidate(id="b", text="B"), GivenCandidate(id="a", text="A")]
    assert record.add_given(given) == ["b", "a"]
    assert record.candidates["a"].model == "given" and record.candidates["a"].created_at == "t2"
    verdict = JudgeVerdict(winner="B", feedback_a="fa", feedback_b="fb", confidence=0.7)
    for index in (1, 0):
        pair = ScheduledPair(presented_a="a", presented_b="b", scheduled_a="b", scheduled_b="a")
        row = record.add_comparison(
            "final", None, index, pair, verdict,
            response=response("{}"), attempts=2, usage=Usage(input_tokens=3), raw_outputs=None,
        )  # fmt: skip
        assert (row.id, row.winner, row.critique_b) == (f"final#{index}", "B", "fb")
        assert (row.attempts, row.usage.input_tokens) == (2, 3)
    assert [c.id for c in record.comparisons_in_order()] == ["final#0", "final#1"]
    fitted = [
        LeaderboardRow("b", 0, 0.4, 1, 1, 2, 0, 0, 2),
        LeaderboardRow("a", 0, -0.4, 2, 2, 0, 2, 0, 2),
    ]
    board = record.add_scores("final", None, fitted)
    assert [(s.phase, s.generation, s.candidate_id, s.rank) for s in board] == [
        ("final", None, "b", 1),
        ("final", None, "a", 2),
    ]
    assert record.leaderboard == board
    assert record.events[-1].data == {"phase": "final", "leader": "b"}


def test_the_snapshot_carries_the_record_and_the_outcome() -> None:
    record = TournamentRecord(now=lambda: "t3")
    record.add_given([GivenCandidate(id="x", text="X"), GivenCandidate(id="y", text="Y")])
    record.commit_population(0, ["x", "y"])
    record.winner_id, record.final_answer, record.postprocessed = "x", "X!", True
    budget = Budget(limits=BudgetLimits(max_calls=5))
    snap = record.snapshot(
        run_id="r", status="completed", input=TournamentInput(task="t"), seed=3,
        profile=None, profile_name=None, usage=[], budget=budget,
    )  # fmt: skip
    assert [c.id for c in snap.candidates] == ["x", "y"]
    assert snap.populations == {0: ["x", "y"]} and snap.written_at == "t3"
    assert (snap.winner_id, snap.final_answer) == ("x", "X!")
    assert snap.final_answer_is_postprocessed
    assert snap.budget.max_calls == 5
    record.commit_population(1, ["y"])  # a later phase does not change a snapshot already sent
    assert 1 not in snap.populations and len(snap.events) == 1
