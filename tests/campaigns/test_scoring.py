"""The pure scorers."""

from __future__ import annotations

import pytest

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


def test_judge_score_reads_the_last_line_on_the_scorers_scale() -> None:
    from workflows.campaign.cell_records import judge_prompt, judge_score

    assert judge_score("Solid work.\n0.8") == (0.8, None)
    assert judge_score("Good.\n8", scale=10) == (0.8, None)  # a 0-10 grade, declared
    assert judge_score("Good.\n10", scale=10) == (1.0, None)
    assert judge_score("Good.\n0", scale=10) == (0.0, None)
    assert judge_score("Good.\n73", scale=100) == (0.73, None)
    # A grade off the declared scale is refused, never guessed into range.
    score, problem = judge_score("Good.\n8")
    assert score is None and problem is not None
    assert "grade 8 is outside the scorer's scale [0, 1]" in problem and "set the" in problem
    assert judge_score("Good.\n10.5", scale=10)[0] is None
    assert judge_score("Bad.\n-0.1")[0] is None
    assert judge_score("Good.\nno number here") == (None, "the judge's last line is not a number")
    assert judge_score("")[0] is None
    # The prompt asks for the declared scale (and for 0 to 1 exactly as before by default).
    assert "score from 0 to 1 alone" in judge_prompt("t", "r", "a")
    assert "score from 0 to 10 alone" in judge_prompt("t", "r", "a", scale=10)


def test_the_judge_scale_is_bounded() -> None:
    from pydantic import TypeAdapter, ValidationError

    from workflows.campaign.document import MAX_JUDGE_SCALE, JudgeScorer, Scorer

    judge = {"kind": "judge", "model": "sim:default", "rubric": "r"}
    assert isinstance(TypeAdapter(Scorer).validate_python(judge), JudgeScorer)
    assert JudgeScorer.model_validate({**judge, "scale": 10}).scale == 10
    for bad in (0, -1, MAX_JUDGE_SCALE * 2, "ten"):
        with pytest.raises(ValidationError):
            JudgeScorer.model_validate({**judge, "scale": bad})
