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


def test_a_pair_judged_by_several_calls_is_one_row_of_their_combined_verdict() -> None:
    from workflows.tournament.types import Verdict
    from workflows.tournament.verdicts import Slot, SlotResult

    record = TournamentRecord(now=lambda: "t4")
    pair = ScheduledPair(presented_a="x", presented_b="y", scheduled_a="y", scheduled_b="x")
    results = [
        SlotResult(
            slot=Slot("j1", "x", "y"),
            verdict=JudgeVerdict(winner="A", feedback_a="good x", feedback_b="weak y"),
            model="m1",
            provider="p1",
            attempts=1,
            usage=Usage(input_tokens=1, output_tokens=2),
            raw_outputs=["r1"],
        ),
        SlotResult(
            slot=Slot("j2", "y", "x"),  # shown the other way round
            verdict=JudgeVerdict(
                winner="B", feedback_a="weak y", feedback_b="good x", confidence=0.9
            ),
            model="m2",
            provider="p1",
            attempts=2,
            usage=Usage(input_tokens=10, output_tokens=20),
            raw_outputs=["r2", "r3"],
        ),
    ]
    row = record.add_combined("final", 3, 7, pair, results, include_raw_outputs=True)
    assert (row.id, row.phase, row.generation) == ("final#7", "final", 3)
    assert (row.presented_a, row.presented_b, row.scheduled_a, row.scheduled_b) == (
        "x",
        "y",
        "y",
        "x",
    )
    assert (row.winner, row.confidence) == ("A", None)  # both judges chose x, shown as A
    assert (row.critique_a, row.critique_b) == ("good x", "weak y")
    assert (row.model, row.provider, row.attempts) == ("m1 + m2", "p1", 3)
    assert row.usage == Usage(input_tokens=11, output_tokens=22)
    assert row.raw_outputs == ["r1", "r2", "r3"]
    assert row.verdicts == [
        Verdict(judge="j1", presented_a="x", presented_b="y", winner="A", attempts=1),
        Verdict(
            judge="j2", presented_a="y", presented_b="x", winner="B", confidence=0.9, attempts=2
        ),
    ]
    assert record.comparisons == [row]
    quiet = record.add_combined("final", None, 8, pair, results, include_raw_outputs=False)
    assert quiet.raw_outputs is None


def test_a_given_candidate_names_no_model_or_provider() -> None:
    record = TournamentRecord(now=lambda: "t5")
    record.add_given([GivenCandidate(id="a", text="A")])
    row = record.candidates["a"]
    assert (row.model, row.provider, row.generation, row.kind, row.status) == (
        "given",
        "given",
        0,
        "initial",
        "generated",
    )
    assert (row.text, row.usage, row.parent_id) == ("A", Usage(), None)


def test_a_candidate_keeps_whether_it_was_simulated_and_an_elite_copy_its_new_place() -> None:
    record = TournamentRecord(now=lambda: "t6")
    simulated = ModelResponse(text="x", model="m", provider="sim", simulated=True)
    record.add_candidate("g0-c0", 0, "initial", None, "generated", simulated)
    assert record.candidates["g0-c0"].simulated is True
    (copy,) = record.copy_elites(2, ["g0-c0"])
    row = record.candidates[copy]
    assert (row.id, row.generation, row.kind, row.status, row.parent_id) == (
        "g2-e0",
        2,
        "elite-copy",
        "elite",
        "g0-c0",
    )


def test_a_comparison_s_index_is_what_follows_the_last_hash() -> None:
    record = TournamentRecord(now=lambda: "t7")
    for index in (10, 9):
        record.comparisons.append(comparison("a#b", index))
    assert [c.id for c in record.comparisons_in_order()] == ["a#b#9", "a#b#10"]


def test_the_snapshot_carries_the_profile_and_the_error() -> None:
    from workflows.tournament.profiles import BUILTIN_PROFILES

    record = TournamentRecord(now=lambda: "t8")
    record.error = "budget.exhausted: spent"
    snap = record.snapshot(
        run_id="r", status="failed", input=TournamentInput(task="t"), seed=1,
        profile=BUILTIN_PROFILES["quick"], profile_name="quick", usage=[],
        budget=Budget(limits=BudgetLimits()),
    )  # fmt: skip
    assert (snap.profile, snap.profile_name) == (BUILTIN_PROFILES["quick"], "quick")
    assert snap.error == "budget.exhausted: spent"
