"""The pure scorers."""

from __future__ import annotations

from workflows.campaign.document import ExactScorer, NumericScorer, RegexScorer
from workflows.campaign.scoring import last_number, score_exact, score_numeric, score_regex


def test_exact() -> None:
    assert score_exact(ExactScorer(kind="exact", expected="Paris"), "  paris \n") == 1.0
    assert score_exact(ExactScorer(kind="exact", expected="Paris", normalize=False), "paris") == 0
    assert score_exact(ExactScorer(kind="exact", expected="Paris"), "Lyon") == 0.0


def test_numeric() -> None:
    scorer = NumericScorer(kind="numeric", expected=1234.5, tolerance=0.01)
    assert score_numeric(scorer, "so the total is 1,234.5") == 1.0
    assert score_numeric(scorer, "1234.6") == 0.0
    assert score_numeric(scorer, "no number") == 0.0
    relative = NumericScorer(kind="numeric", expected=200, tolerance=0.1, relative=True)
    assert score_numeric(relative, "approximately 215") == 1.0
    assert score_numeric(relative, "approximately 225") == 0.0
    assert last_number("a -3.5e2 b 7") == 7.0 and last_number("x -3.5e2") == -350.0


def test_regex() -> None:
    scorer = RegexScorer(kind="regex", pattern=r"O\(n log n\)")
    assert score_regex(scorer, "runs in O(n log n) time") == 1.0
    assert score_regex(scorer, "runs in O(n^2)") == 0.0


def test_judge_score_reads_the_last_line() -> None:
    from workflows.campaign.cell_records import judge_score

    assert judge_score("Solid work.\n0.8") == 0.8
    assert judge_score("Good.\n8") == 0.8  # a 0-10 grade, scaled
    assert judge_score("Good.\nno number here") is None
    assert judge_score("") is None
