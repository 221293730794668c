"""Critique aggregation: buckets, letter rewriting, dedupe, sections, fallback, cap."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from workflows.tournament.critique import (
    FALLBACK_CRITIQUE,
    TRUNCATION_MARK,
    aggregate_critique,
    aggregate_critiques,
)


@dataclass(frozen=True)
class Row:
    presented_a: str
    presented_b: str
    winner: str
    critique_a: str
    critique_b: str


def test_sections_in_order_with_numbered_items() -> None:
    rows = [
        Row("me", "x", "A", "Solid proof.", "ignored: x's own critique"),
        Row("y", "me", "A", "ignored", "Missing the n = 0 case."),
        Row("me", "z", "tie", "  Same as Solution B.  ", "z"),
        Row("w", "me", "B", "w", "Clear and short."),
    ]
    assert aggregate_critique("me", rows) == (
        "Feedback from comparisons this solution won:\n"
        "1. Solid proof.\n"
        "2. Clear and short.\n"
        "\n"
        "Feedback from comparisons this solution tied:\n"
        "1. Same as the other solution.\n"
        "\n"
        "Feedback from comparisons this solution lost:\n"
        "1. Missing the n = 0 case."
    )


def test_letters_become_your_and_the_other_solution() -> None:
    as_a = Row("me", "x", "B", "Solution A misses what Candidate B covers; solution A is slow.", "")
    as_b = Row("x", "me", "A", "", "Candidate B trails candidate A. SOLUTION B lacks tests.")
    text = aggregate_critique("me", [as_a, as_b])
    assert "1. your solution misses what the other solution covers; your solution is slow." in text
    assert "2. your solution trails the other solution. your solution lacks tests." in text


def test_rewriting_leaves_other_words_alone() -> None:
    kept = "Candidate B-tree? Solutions A and B; plan B; solution a bit; Solution AB."
    assert aggregate_critique("me", [Row("me", "x", "A", kept, "")]).endswith(f"1. {kept}")
    possessive = Row("me", "x", "A", "Solution B's loop; Solution A's proof.", "")
    assert aggregate_critique("me", [possessive]).endswith(
        "1. the other solution's loop; your solution's proof."
    )


def test_trim_drop_empty_and_dedupe_first_wins() -> None:
    rows = [
        Row("me", "x", "A", "  Good.  ", ""),
        Row("me", "y", "A", "Good.", ""),
        Row("me", "z", "B", "Good.", ""),  # already said in "won": dropped from "lost"
        Row("me", "w", "B", "   ", ""),
        Row("me", "v", "B", "Too long.", ""),
    ]
    assert aggregate_critique("me", rows) == (
        "Feedback from comparisons this solution won:\n1. Good.\n\n"
        "Feedback from comparisons this solution lost:\n1. Too long."
    )


def test_fallback_when_nothing_survives() -> None:
    expected = "No specific critique was produced. Improve correctness, completeness, and clarity."
    assert expected == FALLBACK_CRITIQUE
    assert aggregate_critique("me", []) == expected
    assert aggregate_critique("me", [Row("me", "x", "A", " ", "fine")]) == expected
    assert aggregate_critique("me", [Row("x", "y", "A", "a", "b")]) == expected


def test_cap_and_truncation_mark() -> None:
    rows = [Row("me", f"x{i}", "A", f"Point {i}: " + "detail " * 20, "") for i in range(300)]
    full = aggregate_critique("me", rows, critique_chars=10**6)
    assert len(full) > 16000
    capped = aggregate_critique("me", rows)
    assert len(capped) <= 16000 and capped.endswith(TRUNCATION_MARK)
    assert TRUNCATION_MARK == "\n\n[Critique truncated.]"
    small = aggregate_critique("me", rows, critique_chars=256)
    assert len(small) <= 256 and small.endswith(TRUNCATION_MARK)
    assert full.startswith(small[: -len(TRUNCATION_MARK)])
    short = aggregate_critique("me", rows[:1], critique_chars=256)
    assert not short.endswith(TRUNCATION_MARK)


def test_cap_minimum_is_256() -> None:
    with pytest.raises(ValueError, match="critique_chars must be >= 256"):
        aggregate_critique("me", [], critique_chars=255)


def test_aggregate_for_many_candidates() -> None:
    rows = [Row("a", "b", "A", "a wins", "b loses")]
    critiques = aggregate_critiques(["a", "b", "c"], rows)
    assert critiques["a"].endswith("1. a wins")
    assert critiques["b"].startswith("Feedback from comparisons this solution lost:")
    assert critiques["c"] == FALLBACK_CRITIQUE
