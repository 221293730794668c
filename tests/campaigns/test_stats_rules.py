"""Every decision branch of the campaign report, on fixtures whose expected values are worked
out by hand and written here (never recomputed with scipy or the code under test).

The paired differences are chosen so the exact Wilcoxon signed-rank p-value is a count of
subsets: with n pairs and no ties or zeros, every one of the 2^n sign patterns of the ranks
1..n is equally likely under H0, and the two-sided p is 2 * #{subsets of 1..n summing to at
most W} / 2^n, where W is the smaller rank sum. The bootstrap CI is never given a number; each
fixture bounds it instead (a resampled mean lies between the sample's min and max), which is
all a decision needs.
"""

from __future__ import annotations

import pytest

from workflows.campaign.records import RunRecord
from workflows.campaign.stats import Analysis, Comparison, analyse, decide

ROPE = 0.02
BASE = 0.5  # the comparator's score on every pair; a variant scores BASE + difference


def record(
    variant: str,
    scenario: str,
    score: float | None,
    *,
    seed: int = 0,
    cost: float = 0.0,
    calls: int = 1,
) -> RunRecord:
    return RunRecord(
        run_id=f"{variant}-{scenario}-{seed}",
        campaign="c",
        variant=variant,
        scenario=scenario,
        seed=seed,
        split="holdout",
        model="m",
        prompt_hash="p",
        config_hash="h",
        commit_sha="abc",
        wall_ms=1.0,
        cost_usd=cost,
        calls=calls,
        holdout_score=score,
        failure_class=None if score is not None else "runner_threw",
    )


def paired(
    diffs: dict[str, list[float]], *, cost: dict[str, float] | None = None
) -> list[RunRecord]:
    """The comparator ``a`` at BASE on scenarios s0..s(n-1), each variant at BASE + its diff."""
    n = len(next(iter(diffs.values())))
    out = [record("a", f"s{i}", BASE) for i in range(n)]
    for variant, ds in diffs.items():
        out += [
            record(variant, f"s{i}", BASE + d, cost=(cost or {}).get(variant, 0.0))
            for i, d in enumerate(ds)
        ]
    return out


def run(
    diffs: dict[str, list[float]], *, min_pairs: int = 6, cost: dict[str, float] | None = None
) -> Analysis:
    records = paired(diffs, cost=cost)
    return analyse(records, variants=["a", *diffs], comparator="a", rope=ROPE, min_pairs=min_pairs)


# Six differences 0.11 .. 0.16, all positive.
#   ranks of |d|: 1..6, W- = 0, so p = 2 * #{sum <= 0} / 64 = 2 * 1 / 64 = 0.03125.
#   mean = (0.11 + 0.16) / 2 = 0.135; deviations +-0.005, +-0.015, +-0.025:
#   sum of squares = 2 * (0.000025 + 0.000225 + 0.000625) = 0.00175, var = 0.00175 / 5 =
#   0.00035, sd = 0.0187083, Cohen's d_z = 0.135 / 0.0187083 = 7.2161.
#   MDE = (z_0.975 + z_0.8) * sd / sqrt(6) = (1.959964 + 0.841621) * 0.0187083 / 2.449490
#       = 0.0213975.
#   Every resampled mean lies in [0.11, 0.16]: CI above 0, Pr(delta > 0) = 1, Pr(ROPE) = 0.
GAIN = [0.11, 0.12, 0.13, 0.14, 0.15, 0.16]


def test_promote_a_clear_gain_with_its_hand_computed_statistics() -> None:
    result = run({"b": GAIN})
    (c,) = result.comparisons
    assert (c.pairs, c.wins, c.losses, c.ties, c.win_rate) == (6, 6, 0, 0, 1.0)
    assert c.mean_delta == pytest.approx(0.135)
    assert c.p_value == pytest.approx(0.03125)
    assert c.q_value == pytest.approx(0.03125)  # one comparison: BH leaves p as it is
    assert c.cohens_d == pytest.approx(7.2161, abs=1e-4)
    assert c.mde == pytest.approx(0.0213975, abs=1e-6)
    assert c.ci_low is not None and c.ci_high is not None
    assert 0.11 - 1e-9 <= c.ci_low <= c.ci_high <= 0.16 + 1e-9
    assert (c.pr_positive, c.pr_rope) == (1.0, 0.0)
    assert c.decision == "promote" and result.decisions == {"b": "promote"}
    assert c.reason.startswith("better than the comparator beyond the ROPE")
    assert result.recommended_variant == "b"
    assert result.recommendation.startswith("promote b: better than the comparator")


# The mirror image: 6 losses, W+ = 0, p = 0.03125, mean -0.135, every resampled mean in
# [-0.16, -0.11]: CI below 0 and the mean below -ROPE.
def test_reject_a_clear_loss() -> None:
    result = run({"b": [-d for d in GAIN]})
    (c,) = result.comparisons
    assert (c.wins, c.losses, c.win_rate) == (0, 6, 0.0)
    assert c.mean_delta == pytest.approx(-0.135)
    assert c.p_value == pytest.approx(0.03125) and c.q_value == pytest.approx(0.03125)
    assert c.cohens_d == pytest.approx(-7.2161, abs=1e-4)
    assert (c.pr_positive, c.pr_rope) == (0.0, 0.0)
    assert c.decision == "reject" and c.reason.startswith("worse than the comparator")
    assert result.recommended_variant == "a"
    assert result.recommendation == "keep a: no variant is promoted"


# Differences +0.001, -0.002, +0.003, -0.004, +0.005, -0.006 (ranks 1..6 by size).
#   W+ = 1 + 3 + 5 = 9, W- = 2 + 4 + 6 = 12; subsets of 1..6 by sum 0..9:
#   1, 1, 1, 2, 2, 3, 4, 4, 4, 5 -> 27, so p = 2 * 27 / 64 = 0.84375.
#   mean = -0.003 / 6 = -0.0005; every resampled mean lies in [-0.006, 0.005], inside the
#   ROPE [-0.02, 0.02]: equivalent, and Pr(ROPE) = 1.
def test_equivalent_when_the_whole_interval_lies_inside_the_rope() -> None:
    result = run({"b": [0.001, -0.002, 0.003, -0.004, 0.005, -0.006]})
    (c,) = result.comparisons
    assert (c.wins, c.losses, c.win_rate) == (3, 3, 0.5)
    assert c.mean_delta == pytest.approx(-0.0005)
    assert c.p_value == pytest.approx(0.84375)
    assert c.pr_rope == 1.0
    assert c.ci_low is not None and c.ci_high is not None
    assert -0.006 - 1e-9 <= c.ci_low <= c.ci_high <= 0.005 + 1e-9
    assert c.decision == "equivalent" and c.reason.startswith("the whole CI lies inside")


# Differences 0.3, -0.01, 0.2, -0.015, 0.25, -0.005: ranks of |d| are 6, 2, 4, 3, 5, 1.
#   W- = 2 + 3 + 1 = 6; subsets of 1..6 by sum 0..6: 1, 1, 1, 2, 2, 3, 4 -> 14,
#   p = 2 * 14 / 64 = 0.4375: not significant, so neither promote nor reject.
#   mean = (0.75 - 0.03) / 6 = 0.12. The CI's low end is >= min = -0.015 >= -ROPE, but its high
#   end is above the ROPE: a resampled mean is <= 0.02 only when it draws no big value
#   (one big draw gives at least (0.2 - 5 * 0.015) / 6 = 0.0208), probability (1/2)^6 = 1/64,
#   far below the 97.5% the upper bound needs. Half inside the ROPE is not equivalent: hold.
HALF_IN_ROPE = [0.3, -0.01, 0.2, -0.015, 0.25, -0.005]


def test_hold_when_the_interval_leaves_the_rope_above() -> None:
    result = run({"b": HALF_IN_ROPE})
    (c,) = result.comparisons
    assert (c.wins, c.losses) == (3, 3)
    assert c.mean_delta == pytest.approx(0.12)
    assert c.p_value == pytest.approx(0.4375)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low >= -ROPE and c.ci_high > ROPE
    assert c.decision == "hold" and c.reason.startswith("no decisive difference yet")
    assert result.recommended_variant == "a"


def test_hold_when_the_interval_leaves_the_rope_below() -> None:
    # The same fixture negated: p = 0.4375, mean -0.12, CI high <= 0.015 <= ROPE, low < -ROPE.
    result = run({"b": [-d for d in HALF_IN_ROPE]})
    (c,) = result.comparisons
    assert c.p_value == pytest.approx(0.4375) and c.mean_delta == pytest.approx(-0.12)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_high <= ROPE and c.ci_low < -ROPE
    assert c.decision == "hold"


# Twelve differences: eleven gains 0.10, 0.11, ..., 0.20 and one loss of -0.95.
#   The loss has the largest |d|, rank 12, so W- = 12. Subsets of 1..12 by sum 0..12 (distinct
#   partitions): 1, 1, 1, 2, 2, 3, 4, 5, 6, 8, 10, 12, 15 -> 70, p = 2 * 70 / 4096 = 0.0341797
#   < 0.05: significant. mean = (11 * 0.15 - 0.95) / 12 = 0.7 / 12 = 0.0583333 > ROPE.
#   But the bootstrap CI reaches below 0: a resample with k >= 3 draws of the loss has mean
#   <= (9 * 0.20 - 3 * 0.95) / 12 < 0, and P(k >= 3) for k ~ Bin(12, 1/12) is
#   1 - (11/12)^12 - 12 (1/12)(11/12)^11 - 66 (1/12)^2 (11/12)^10 = 1 - 0.3520 - 0.3840 - 0.1920
#   = 0.072 > 0.025. Significant, beyond the ROPE, yet the CI crosses 0: hold, not promote.
OUTLIER = [0.10 + 0.01 * i for i in range(11)] + [-0.95]


def test_hold_a_significant_gain_whose_interval_crosses_zero() -> None:
    result = run({"b": OUTLIER})
    (c,) = result.comparisons
    assert (c.pairs, c.wins, c.losses) == (12, 11, 1)
    assert c.p_value == pytest.approx(140 / 4096) and c.q_value == pytest.approx(140 / 4096)
    assert c.mean_delta == pytest.approx(0.7 / 12)
    assert c.ci_low is not None and c.ci_low < 0
    assert c.decision == "hold"


def test_hold_a_significant_loss_whose_interval_crosses_zero() -> None:
    # Negated: p the same, mean -0.0583 < -ROPE, CI high > 0: hold, not reject.
    result = run({"b": [-d for d in OUTLIER]})
    (c,) = result.comparisons
    assert c.p_value == pytest.approx(140 / 4096) and c.mean_delta == pytest.approx(-0.7 / 12)
    assert c.ci_high is not None and c.ci_high > 0
    assert c.decision == "hold"


# Differences 0.011 .. 0.016: significant (p = 0.03125 as for GAIN) with the CI in
# [0.011, 0.016], above 0, but the mean 0.0135 does not exceed the ROPE 0.02: a real but
# negligible gain. Its CI lies inside the ROPE: equivalent, not promote.
def test_a_significant_gain_inside_the_rope_is_equivalent_not_promoted() -> None:
    result = run({"b": [d / 10 for d in GAIN]})
    (c,) = result.comparisons
    assert c.p_value == pytest.approx(0.03125) and c.mean_delta == pytest.approx(0.0135)
    assert c.decision == "equivalent"
    result = run({"b": [-d / 10 for d in GAIN]})
    assert result.decisions == {"b": "equivalent"}


# Benjamini-Hochberg across variants: b = GAIN (p = 0.03125) and c = HALF_IN_ROPE (p = 0.4375).
#   sorted p: 0.03125 (rank 1), 0.4375 (rank 2) of m = 2.
#   q(2) = 0.4375 * 2 / 2 = 0.4375; q(1) = min(0.03125 * 2 / 1, q(2)) = 0.0625 >= 0.05.
#   So b, promoted alone, is only held next to c: the decision uses q, not p.
def test_the_decision_uses_the_bh_q_value_not_the_p_value() -> None:
    result = run({"b": GAIN, "c": HALF_IN_ROPE})
    b, c = result.comparisons
    assert b.p_value == pytest.approx(0.03125) and b.q_value == pytest.approx(0.0625)
    assert c.p_value == pytest.approx(0.4375) and c.q_value == pytest.approx(0.4375)
    assert result.decisions == {"b": "hold", "c": "hold"}
    assert b.reason.endswith("q=0.0625)")


# Two promoted variants: b = GAIN (mean 0.135), c = GAIN + 0.1 (mean 0.235), both p = 0.03125.
#   BH with equal p: q(2) = 0.03125 * 2 / 2 = 0.03125, q(1) = min(0.0625, 0.03125) = 0.03125.
#   The larger mean difference is recommended; on equal means, the cheaper variant.
def test_the_recommendation_is_the_largest_gain_then_the_cheapest() -> None:
    result = run({"b": GAIN, "c": [d + 0.1 for d in GAIN]})
    assert [c.q_value for c in result.comparisons] == pytest.approx([0.03125, 0.03125])
    assert result.decisions == {"b": "promote", "c": "promote"}
    assert result.recommended_variant == "c"
    assert result.recommendation.startswith("promote c:")
    same = run({"b": GAIN, "c": GAIN}, cost={"b": 0.5, "c": 0.2})
    assert same.recommended_variant == "c"
    same = run({"b": GAIN, "c": GAIN}, cost={"b": 0.2, "c": 0.5})
    assert same.recommended_variant == "b"


def test_needs_more_data_below_the_floor_and_below_min_pairs() -> None:
    # 5 pairs: under the floor of 6 whatever min_pairs says.
    result = run({"b": GAIN[:5]}, min_pairs=1)
    (c,) = result.comparisons
    assert c.decision == "needs_more_data" and c.reason == "5 pairs, fewer than the 6 needed"
    # 6 pairs against min_pairs 7.
    result = run({"b": GAIN}, min_pairs=7)
    assert result.comparisons[0].reason == "6 pairs, fewer than the 7 needed"
    assert result.recommendation == "keep a: no variant is promoted (b need more data)"
    assert result.recommended_variant == "a"


def test_unpaired_and_failed_cells_are_counted_but_not_paired() -> None:
    # b fails on s1 and has no s5 at all: 4 pairs; the summary counts what was run.
    records = paired({"b": GAIN})
    records = [r for r in records if not (r.variant == "b" and r.scenario in ("s1", "s5"))]
    records.append(record("b", "s1", None, cost=0.25, calls=3))
    result = analyse(records, variants=["a", "b"], comparator="a", rope=ROPE, min_pairs=1)
    summary = {s.variant: s for s in result.variants}["b"]
    assert (summary.cells, summary.scored, summary.failed, summary.calls) == (5, 4, 1, 7)
    assert summary.total_cost_usd == pytest.approx(0.25)
    assert summary.mean_cost_usd == pytest.approx(0.05)  # 0.25 over 5 cells
    # Scores 0.61, 0.63, 0.64, 0.65: mean 2.53 / 4 = 0.6325.
    assert summary.mean == pytest.approx(0.6325)
    (c,) = result.comparisons
    assert c.pairs == 4 and c.decision == "needs_more_data"


def test_ties_count_half_a_win() -> None:
    # +0.1, 0, 0, -0.1: one win, one loss, two ties; win rate (1 + 0.5 * 2) / 4 = 0.5.
    result = run({"b": [0.1, 0.0, 0.0, -0.1]}, min_pairs=1)
    (c,) = result.comparisons
    assert (c.wins, c.losses, c.ties, c.win_rate) == (1, 1, 2, 0.5)
    assert c.mean_delta == pytest.approx(0.0)


def test_identical_differences_have_no_spread() -> None:
    # Six differences of exactly 0.25 (0.75 - 0.5 is exact in binary): sd 0, Cohen's d
    # undefined (None), MDE 0, and every resampled mean is 0.25: CI [0.25, 0.25].
    result = run({"b": [0.25] * 6})
    (c,) = result.comparisons
    assert c.mean_delta == 0.25 and c.cohens_d is None and c.mde == 0.0
    assert (c.ci_low, c.ci_high) == (0.25, 0.25)
    # No difference at all: p = 1 (scipy refuses an all-zero sample), d = 0, equivalent.
    result = run({"b": [0.0] * 6})
    (c,) = result.comparisons
    assert (c.p_value, c.cohens_d, c.ci_low, c.ci_high) == (1.0, 0.0, 0.0, 0.0)
    assert c.decision == "equivalent"


# -- decide() at each boundary, on comparisons written by hand -----------------------------


def comparison(**kw: float | int | None) -> Comparison:
    fields: dict[str, object] = {"variant": "b", "comparator": "a", "pairs": 20, "q_value": 0.01}
    fields |= {"mean_delta": 0.1, "ci_low": 0.05, "ci_high": 0.15}
    return Comparison.model_validate(fields | kw)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "promote"),
        ({"q_value": 0.05}, "hold"),  # q must be below alpha, not equal
        ({"q_value": 0.0499}, "promote"),
        ({"q_value": None}, "hold"),  # no test ran: q counts as 1
        ({"ci_low": 0.0}, "hold"),  # the CI must be above 0, not touch it
        ({"ci_low": 1e-9}, "promote"),
        ({"mean_delta": ROPE}, "hold"),  # the mean must exceed the ROPE, not equal it
        ({"mean_delta": ROPE + 1e-9}, "promote"),
        ({"mean_delta": -0.1, "ci_low": -0.15, "ci_high": -0.05}, "reject"),
        ({"mean_delta": -0.1, "ci_low": -0.15, "ci_high": -0.05, "q_value": 0.05}, "hold"),
        ({"mean_delta": -0.1, "ci_low": -0.15, "ci_high": 0.0}, "hold"),
        ({"mean_delta": -ROPE, "ci_low": -0.15, "ci_high": -0.05}, "hold"),
        ({"mean_delta": -ROPE - 1e-9, "ci_low": -0.15, "ci_high": -0.05}, "reject"),
        # Equivalence is inclusive at both ends of the ROPE, whatever q says.
        ({"mean_delta": 0.0, "ci_low": -ROPE, "ci_high": ROPE}, "equivalent"),
        ({"mean_delta": 0.0, "ci_low": -ROPE - 1e-9, "ci_high": ROPE}, "hold"),
        ({"mean_delta": 0.0, "ci_low": -ROPE, "ci_high": ROPE + 1e-9}, "hold"),
        ({"mean_delta": 0.0, "ci_low": -0.01, "ci_high": 0.01, "q_value": 0.5}, "equivalent"),
        ({"pairs": 5}, "needs_more_data"),
        ({"pairs": 19}, "needs_more_data"),  # min_pairs 20 below
    ],
)
def test_decide_at_each_boundary(fields: dict[str, float | int | None], expected: str) -> None:
    decision, _ = decide(comparison(**fields), rope=ROPE, min_pairs=20)
    assert decision == expected


def test_decide_says_why_with_the_numbers() -> None:
    decision, reason = decide(comparison(), rope=ROPE, min_pairs=6)
    assert decision == "promote"
    assert reason == (
        "better than the comparator beyond the ROPE (delta +0.100, 95% CI [+0.050, +0.150], q=0.01)"
    )
    _, reason = decide(comparison(pairs=20), rope=ROPE, min_pairs=25)
    assert reason == "20 pairs, fewer than the 25 needed"
