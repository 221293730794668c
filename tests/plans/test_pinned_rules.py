"""Rules that a mutation of the code once got past the suite: each is pinned here by a case
that fails when the rule is changed."""

from __future__ import annotations

import numpy as np
import pytest

from workflows.plan.check_types import CelOutcome
from workflows.plan.model import MAX_STEPS
from workflows.plan.validate import validate_document, validate_text
from workflows.plan_run.checks import _holds
from workflows.tournament import bootstrap as bootstrap_module
from workflows.tournament.bootstrap import (
    LEVEL,
    MIN_RESAMPLES,
    WORK_CEILING,
    Bootstrap,
    bootstrap,
    resamples_within_ceiling,
)
from workflows.tournament.bradley_terry import canonical_arrays, fit_arrays
from workflows.tournament.judge_parse import Outcome


def test_a_plan_over_its_step_ceiling_is_refused_before_its_steps_are_read() -> None:
    assert MAX_STEPS == 10_000
    steps = [{"id": f"s{i}", "kind": "set", "set": {"v": "1"}} for i in range(MAX_STEPS + 1)]
    errors = validate_document({"schema": "ponder-plan/1", "name": "big", "steps": steps}).errors
    assert [(e.code, e.path) for e in errors] == [("field.range", "steps")]
    assert f"got {MAX_STEPS + 1}" in errors[0].message


@pytest.mark.parametrize("value", [1, "true", [True], {"ok": True}, 1.0])
def test_an_ensure_holds_only_on_the_boolean_true(value: object) -> None:
    holds, shown = _holds(CelOutcome(ok=True, value=value))  # type: ignore[arg-type]
    assert holds is False and shown.startswith("evaluated to ")
    assert _holds(CelOutcome(ok=True, value=True)) == (True, "true")
    assert _holds(CelOutcome(ok=False, error="boom"))[0] is False


def test_a_bootstrap_interval_runs_from_the_2_5th_to_the_97_5th_percentile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two candidates, A ahead: on the leaderboard's scale A's point is +1 and B's -1 (centred,
    # divided by the spread). The refits are replaced by 101 rows c * (the full-data fit),
    # c = 0, 0.02, ..., 2, so A's resampled scores are exactly c and B's -c: the 2.5th and
    # 97.5th percentiles of 0..2 in 101 even steps are 0.05 and 1.95 (a 50% interval would
    # be 0.5 to 1.5).
    outcomes = [Outcome("a", "b", "A")] * 3 + [Outcome("a", "b", "B")]
    ids, a, b, y = canonical_arrays(["a", "b"], outcomes)
    full = fit_arrays(len(ids), a, b, y, 0.01)
    scales = np.linspace(0.0, 2.0, 101)

    def rows(design: object, counts: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
        assert counts.shape == (101, 4)  # one row of counts per resample
        return np.outer(scales, full)

    monkeypatch.setattr(bootstrap_module, "refit_distinct", rows)
    result = bootstrap(["a", "b"], outcomes, resamples=101)
    assert LEVEL == 0.95 and result.resamples == 101
    assert result.low == pytest.approx({"a": 0.05, "b": -1.95})
    assert result.high == pytest.approx({"a": 1.95, "b": -0.05})
    assert result.top_share == pytest.approx({"a": 1.0, "b": 0.0})  # row 0 ties: the first id


def test_plan_errors_come_first_then_each_steps_by_index() -> None:
    # found in this order: steps[2] (parsing), flows, steps[1] (the deps check, after parsing)
    steps = [
        {"id": "a", "kind": "set", "set": {"v": "1"}},
        {"id": "b", "kind": "set", "set": {"v": "1"}, "deps": ["nope"]},
        {"id": "c", "kind": "set", "set": {"v": "1"}, "bogus": 1},
    ]
    doc = {"schema": "ponder-plan/1", "name": "x", "steps": steps, "flows": 5}
    result = validate_document(doc)
    assert [(e.code, e.path) for e in result.errors] == [
        ("field.type", "flows"),
        ("deps.unknown", "steps[1].deps[0]"),
        ("field.unknown", "steps[2].bogus"),
    ]
    assert result.form == "ponder-plan/1"


def test_a_json_file_is_read_as_json() -> None:
    text = "steps: []"  # YAML, not JSON
    (json_error,) = validate_text(text, filename="plan.json").errors
    assert (json_error.code, json_error.message[:15]) == ("document.syntax", "not valid JSON:")
    assert not any(e.code == "document.syntax" for e in validate_text(text).errors)


@pytest.mark.parametrize(
    ("requested", "comparisons", "expected"),
    [
        # n = 4: 6 distinct pairs; a refit costs 8 * (2 * m * (2 * 4 + 6) + 4**3) flops
        (1000, 50_000, 178),  # 2e9 / 11,200,512 = 178.6
        (150, 50_000, 150),  # fewer asked than the ceiling allows
        (1000, 200_000, 0),  # 2e9 / 44,800,512 = 44.6: under 100 resamples, none
        (40, 200_000, 40),  # ... unless no more were asked for
    ],
)
def test_resamples_stay_within_the_work_ceiling(
    requested: int, comparisons: int, expected: int
) -> None:
    assert WORK_CEILING == 2e9 and MIN_RESAMPLES == 100
    assert resamples_within_ceiling(requested, 4, comparisons) == expected


def test_a_bootstrap_without_two_candidates_or_outcomes_has_no_intervals() -> None:
    assert bootstrap(["a"], [], resamples=300, seed=7) == Bootstrap(0, 300, 7, {}, {}, {})
    assert bootstrap(["a", "b"], [], resamples=300).top_share == {}
