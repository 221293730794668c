"""The report statistics' edges (one pair, two pairs, no scores, ties on the Pareto front, the
bootstrap's percentiles), with expected values worked out by hand. Each test pins a rule that
a mutation testing run (``make mutation``) found no test for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from activities.campaign.report import ReportDesign, render_report
from tests.campaigns.test_stats_rules import OUTLIER, paired, record
from workflows.campaign.stats import (
    BOOTSTRAP_SEED,
    analyse,
    bootstrap_mean_ci,
    compare,
    paired_power,
    pareto_front,
    pilot_diff_sd,
)


class RowPicks:
    """A generator whose every resample draws one index ``n`` times: resample i is row i."""

    def integers(self, low: int, high: int | None = None, size: tuple[int, int] = (0, 0)):  # type: ignore[no-untyped-def]
        if high is None:
            low, high = 0, low
        rows, n = size
        assert (low, high) == (0, n) and rows == n
        return np.repeat(np.arange(n)[:, None], n, axis=1)


def test_the_bootstrap_interval_is_the_2_5_and_97_5_percentiles() -> None:
    # 100 values 0..99 and resample i = [i] * 100, so the resampled means are 0..99. Linear
    # percentiles of 0..99: 2.5% at 0.025 * 99 = 2.475, 97.5% at 0.975 * 99 = 96.525.
    data = [float(i) for i in range(100)]
    low, high, means = bootstrap_mean_ci(data, RowPicks(), resamples=100)  # type: ignore[arg-type]
    assert list(means) == data
    assert (low, high) == pytest.approx((2.475, 96.525))


def test_the_bootstrap_draws_every_position() -> None:
    # [1, 0, 0, 0, 0, 0]: a resample holds the first value with probability
    # 1 - (5/6)^6 = 0.665, so the upper bound is at least 1/6 and the lower bound is 0.
    low, high, means = bootstrap_mean_ci([1.0, 0, 0, 0, 0, 0], np.random.default_rng(0))
    assert low == 0.0 and high >= 1 / 6
    assert 0.6 < float((means > 0).mean()) < 0.73


def test_one_pair() -> None:
    # n = 1: W- = 0 of the 2 sign patterns, p = 2 * 1 / 2 = 1. No spread: sd 0, Cohen's d
    # undefined (a nonzero mean over no spread), no MDE; the only resample is the pair itself.
    c = compare("b", "a", [0.3], rope=0.02, rng=np.random.default_rng(0))
    assert (c.pairs, c.wins, c.mean_delta) == (1, 1, 0.3)
    assert c.p_value == pytest.approx(1.0)
    assert c.cohens_d is None and c.mde is None
    assert (c.ci_low, c.ci_high, c.pr_positive, c.pr_rope) == (0.3, 0.3, 1.0, 0.0)


def test_two_pairs() -> None:
    # 0.1 and 0.3: mean 0.2, sd sqrt((0.01 + 0.01) / 1) = 0.1414214, d_z = 0.2 / 0.1414214 =
    # 1.4142136; MDE = (1.959964 + 0.841621) * 0.1414214 / sqrt(2) = 0.2801585.
    c = compare("b", "a", [0.1, 0.3], rope=0.02, rng=np.random.default_rng(0))
    assert c.cohens_d == pytest.approx(math.sqrt(2))
    assert c.mde == pytest.approx(0.2801585, abs=1e-6)


def test_probabilities_from_the_bootstrap_are_strict_above_zero_and_inclusive_in_the_rope() -> None:
    # Every difference 0.25 (exact in binary) and a ROPE of exactly 0.25: each resampled mean
    # is 0.25, inside the closed ROPE, so Pr(ROPE) = 1. All zeros: no mean is above 0.
    c = compare("b", "a", [0.25] * 6, rope=0.25, rng=np.random.default_rng(0))
    assert (c.pr_positive, c.pr_rope) == (1.0, 1.0)
    c = compare("b", "a", [0.0] * 6, rope=0.02, rng=np.random.default_rng(0))
    assert (c.pr_positive, c.pr_rope) == (0.0, 1.0)


def test_rounding_noise_of_large_identical_differences_is_no_spread() -> None:
    # 1000 + k * 1e-11: the SD (about 1e-11) is below 1e-12 * |mean| = 1e-9, so it is
    # rounding noise, not spread: d_z is undefined and the MDE is 0.
    c = compare(
        "b", "a", [1000.0 + k * 1e-11 for k in range(6)], rope=0.02, rng=np.random.default_rng(0)
    )
    assert c.cohens_d is None and c.mde == 0.0


def test_power_under_no_effect_is_alpha_and_edges() -> None:
    # With no effect the power of a two-sided test is its size: 0.025 + 0.025 = 0.05.
    assert paired_power(0.0, 1.0, 10) == pytest.approx(0.05)
    assert paired_power(-0.5, 1.0, 20) == pytest.approx(paired_power(0.5, 1.0, 20))
    assert paired_power(0.5, 1.0, 1) == 0.0  # one pair: no variance, no test
    assert 0.0 < paired_power(0.5, 1.0, 2) < 0.5
    assert paired_power(0.5, 0.0, 10) == 1.0  # no noise: any effect is seen


def test_pilot_sd_pools_every_variant() -> None:
    # b's differences 0.1, 0.3 and c's 0.2, 0.4 pool to 0.1, 0.2, 0.3, 0.4: mean 0.25,
    # squared deviations 0.0225 + 0.0025 + 0.0025 + 0.0225 = 0.05, / 3 -> sd 0.1290994.
    records = paired({"b": [0.1, 0.3], "c": [0.2, 0.4]})
    assert pilot_diff_sd(records, "a") == pytest.approx(0.1290994, abs=1e-7)
    # Two differences are enough for an SD (sqrt(0.02) = 0.1414214); one is not.
    assert pilot_diff_sd(paired({"b": [0.1, 0.3]}), "a") == pytest.approx(0.1414214, abs=1e-7)
    assert pilot_diff_sd(paired({"b": [0.1]}), "a") is None


def test_pareto_dominance_is_at_least_as_good_on_both_and_better_on_one() -> None:
    assert pareto_front({"a": (1.0, 0.5), "b": (1.0, 0.6)}) == {"b"}  # same cost, better
    assert pareto_front({"a": (1.0, 0.5), "b": (0.5, 0.5)}) == {"b"}  # same score, cheaper
    assert pareto_front({"a": (1.0, 0.5), "b": (1.0, 0.5)}) == {"a", "b"}  # a tie: both


def test_summaries_of_a_variant_without_scores_or_cells() -> None:
    # a and b score 0.5 on 6 scenarios (CI [0.5, 0.5] exactly), b at cost 0.1 a cell, so a
    # dominates it; c only failed (one cell, cost 0.2); d has no cell at all.
    records = paired({"b": [0.0] * 6}, cost={"b": 0.1})
    records.append(record("c", "s0", None, cost=0.2))
    result = analyse(records, variants=["a", "b", "c", "d"], comparator="a", rope=0.02, min_pairs=6)
    a, b, c, d = result.variants
    assert (a.mean, a.ci_low, a.ci_high, a.pareto) == (0.5, 0.5, 0.5, True)
    assert (b.mean, b.ci_low, b.ci_high, b.pareto) == (0.5, 0.5, 0.5, False)
    assert b.mean_cost_usd == pytest.approx(0.1) and b.total_cost_usd == pytest.approx(0.6)
    assert (c.cells, c.scored, c.failed, c.mean, c.ci_low, c.pareto) == (1, 0, 1, None, None, False)
    assert c.mean_cost_usd == pytest.approx(0.2)
    assert (d.cells, d.mean, d.mean_cost_usd, d.total_cost_usd, d.pareto) == (
        0,
        None,
        0.0,
        0.0,
        False,
    )
    assert result.recommendation == "keep a: no variant is promoted (c, d need more data)"


def test_bootstrap_streams_follow_the_variant_id_not_its_position() -> None:
    records = paired({"b": OUTLIER, "c": [d / 2 for d in OUTLIER], "d": OUTLIER})

    def by_variant(variants: list[str], seed: int = BOOTSTRAP_SEED) -> dict[str, object]:
        result = analyse(
            records, variants=variants, comparator="a", rope=0.02, min_pairs=6, seed=seed
        )
        rows: dict[str, object] = {s.variant: s.model_dump() for s in result.variants}
        rows |= {f"{c.variant}-a": c.model_dump() for c in result.comparisons}
        return rows

    forward = by_variant(["a", "b", "c", "d"])
    assert by_variant(["d", "c", "a", "b"]) == forward  # reordered: the very same intervals
    assert by_variant(["a", "b", "c", "d"], seed=7) != forward  # the seed is the campaign's
    # b and d hold the same data under two ids: two streams, two (valid) intervals.
    assert forward["b-a"] != forward["d-a"]


def test_the_report_uses_the_documents_analysis_seed() -> None:
    records = paired({"b": OUTLIER})

    def analysis(**doc: object) -> dict[str, object]:
        document = {"campaign_id": "c", "variants": [{"id": "a"}, {"id": "b"}], **doc}
        design = ReportDesign.from_document(
            "run", document, fingerprint="f", status="completed", planned_cells=24
        )
        return render_report(design, records)[0].model_dump()

    default = analysis()
    assert analysis(analysis_seed=BOOTSTRAP_SEED) == default
    assert analysis(analysis_seed=0) != default  # 0 is a seed, not "none given"
