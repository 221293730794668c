"""Direct tests of the judge statistics in ``summary.json``: counts by hand."""

from __future__ import annotations

from dataclasses import dataclass, field

from workflows.tournament.judge_stats import Rate, _flagged, judge_summary, rate
from workflows.tournament.types import Verdict


@dataclass(frozen=True)
class Row:
    presented_a: str
    presented_b: str
    winner: str
    model: str = "sim:judge"
    id: str = "r"
    verdicts: list[Verdict] | None = field(default=None)


def test_a_rate_whose_interval_starts_at_one_half_is_not_significant() -> None:
    edge = Rate(count=5, total=10, rate=0.5, low=0.5, high=0.6)
    assert _flagged(edge)["significant"] is False
    assert _flagged(Rate(1, 10, 0.1, 0.49, 0.5))["significant"] is False
    assert _flagged(Rate(9, 10, 0.9, 0.51, 0.99))["significant"] is True
    assert _flagged(rate(0, 0))["significant"] is False


def test_the_longer_win_rate_counts_decisive_verdicts_between_different_lengths() -> None:
    rows = [
        Row("x", "y", "tie"),  # a tie first: skipped, the rest still counted
        Row("x", "y", "A"),  # x is longer and won
        Row("y", "x", "A"),  # y won, the shorter one
        Row("x", "z", "A"),  # same lengths: skipped
        Row("x", "unknown", "A"),  # no length: skipped
    ]
    lengths = {"x": 10, "y": 5, "z": 10}
    summary = judge_summary(rows, both_orders=False, panel=["sim:judge"], lengths=lengths)
    assert summary["longer_win_rate"] == rate(1, 2).as_dict() | {"significant": False}
    assert summary["orders"] == "one"
    assert judge_summary(rows, both_orders=True, panel=["sim:judge"])["orders"] == "both"
    assert "longer_win_rate" not in judge_summary(rows, both_orders=False, panel=["sim:judge"])


def panel_row(a: str, b: str, first: str, second: str) -> Row:
    calls = [
        Verdict(judge="openai:gpt", presented_a=a, presented_b=b, winner=first),  # type: ignore[arg-type]
        Verdict(judge="anthropic:claude", presented_a=a, presented_b=b, winner=second),  # type: ignore[arg-type]
    ]
    return Row(a, b, first, verdicts=calls)


def test_each_judge_of_a_panel_is_counted_on_its_own_verdicts() -> None:
    # g is a gpt candidate, c a claude one; the gpt judge always picks g, the claude judge c.
    rows = [panel_row("g", "c", "A", "B"), panel_row("c", "g", "B", "A")]
    families = {"g": "openai", "c": "claude"}
    lengths = {"g": 100, "c": 10}
    panel = ["openai:gpt", "anthropic:claude"]
    summary = judge_summary(
        rows, both_orders=False, panel=panel, families=families, lengths=lengths
    )
    own = summary["own_family_win_rate"]
    assert own["openai:gpt"]["count"] == 2 and own["openai:gpt"]["total"] == 2
    assert own["anthropic:claude"]["count"] == 2 and own["anthropic:claude"]["total"] == 2
    by_judge = summary["by_judge"]
    assert by_judge["openai:gpt"]["longer_win_rate"] == rate(2, 2).as_dict() | {
        "significant": False
    }
    assert by_judge["anthropic:claude"]["longer_win_rate"]["count"] == 0
    assert summary["longer_win_rate"]["count"] == 2
    assert summary["longer_win_rate"]["total"] == 4


def test_no_right_verdict_has_no_mean_confidence() -> None:
    from workflows.tournament.judge_stats import confidence_vs_correctness

    rows = [
        Row(
            "good",
            "bad",
            "B",
            verdicts=[
                Verdict(
                    judge="j", presented_a="good", presented_b="bad", winner="B", confidence=0.8
                )
            ],
        )
    ]
    result = confidence_vs_correctness(rows, {"good": 1.0, "bad": 0.0})
    assert result is not None
    assert (result["mean_confidence_correct"], result["mean_confidence_incorrect"]) == (None, 0.8)
