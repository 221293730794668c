"""The report's statistics on fixed fixtures, checked against scipy and by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from workflows.campaign.records import RunRecord
from workflows.campaign.stats import analyse, pair, pareto_front


def record(variant: str, scenario: str, seed: int, score: float, cost: float = 0.0) -> RunRecord:
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
        holdout_score=score,
    )


def matrix(deltas: dict[tuple[str, int], float], variant: str = "b") -> list[RunRecord]:
    out = []
    for (scenario, seed), delta in deltas.items():
        base = 0.1 * seed + (0.5 if scenario == "s1" else 0.0)
        out.append(record("a", scenario, seed, base))
        out.append(record(variant, scenario, seed, base + delta, cost=0.01))
    return out


def test_a_clear_gain_is_promoted_and_matches_scipy() -> None:
    deltas = {(f"s{s}", seed): 0.2 + 0.01 * seed + 0.003 * s for s in range(3) for seed in range(8)}
    records = matrix(deltas)
    result = analyse(records, variants=["a", "b"], comparator="a", rope=0.02, min_pairs=20)
    (c,) = result.comparisons
    diffs = np.array([v - b for _, _, v, b in pair(records, "b", "a")])
    assert c.pairs == 24 and c.wins == 24
    assert c.p_value == stats.wilcoxon(diffs).pvalue
    assert c.cohens_d == diffs.mean() / diffs.std(ddof=1)
    assert c.ci_low is not None and c.ci_low > 0.2
    assert c.pr_positive == 1.0 and c.pr_rope == 0.0
    assert result.decisions == {"b": "promote"}
    assert result.recommended_variant == "b"
    assert result.recommendation.startswith("promote b")


def test_identical_variant_is_equivalent_not_promoted() -> None:
    records = matrix({(f"s{s}", seed): 0.0 for s in range(3) for seed in range(8)})
    result = analyse(records, variants=["a", "b"], comparator="a", rope=0.02, min_pairs=20)
    assert result.decisions == {"b": "equivalent"}
    assert result.recommended_variant == "a"


def test_too_few_pairs_need_more_data() -> None:
    records = matrix({("s0", seed): 0.3 for seed in range(5)})
    result = analyse(records, variants=["a", "b"], comparator="a", rope=0.02, min_pairs=1)
    assert result.decisions == {"b": "needs_more_data"}  # under the floor of 6
    records = matrix({("s0", seed): 0.3 for seed in range(10)})
    assert (
        analyse(records, variants=["a", "b"], comparator="a", rope=0.02, min_pairs=20).decisions[
            "b"
        ]
        == "needs_more_data"
    )


def test_pairing_is_by_scenario_and_seed() -> None:
    # Scenario s1 is easy for both (+0.5): paired by seed alone, b's s0 cells would meet a's s1
    # cells and look worse. Paired by (scenario, seed), b is better everywhere by 0.1.
    records = matrix({(s, seed): 0.1 for s in ("s0", "s1") for seed in range(10)})
    pairs = pair(records, "b", "a")
    assert all(abs((v - c) - 0.1) < 1e-12 for _, _, v, c in pairs)
    by_seed = {r.seed: r.score for r in records if r.variant == "a"}  # last scenario wins
    naive = [r.score - by_seed[r.seed] for r in records if r.variant == "b" and r.score is not None]
    assert min(naive) < 0  # the seed-only pairing would see losses
    result = analyse(records, variants=["a", "b"], comparator="a", rope=0.02, min_pairs=20)
    assert result.comparisons[0].wins == 20 and result.decisions == {"b": "promote"}


def test_bh_q_values_match_scipy_and_the_report_is_deterministic() -> None:
    rng = np.random.default_rng(3)
    records = []
    for variant, shift in (("b", 0.15), ("c", 0.01), ("d", -0.2)):
        for s in range(4):
            for seed in range(6):
                records.append(record(variant, f"s{s}", seed, 0.5 + shift + rng.normal(0, 0.05)))
    for s in range(4):
        for seed in range(6):
            records.append(record("a", f"s{s}", seed, 0.5 + rng.normal(0, 0.05)))
    variants = ["a", "b", "c", "d"]
    result = analyse(records, variants=variants, comparator="a", rope=0.02, min_pairs=20)
    ps = [c.p_value for c in result.comparisons]
    assert [c.q_value for c in result.comparisons] == list(stats.false_discovery_control(ps))
    assert result.decisions["b"] == "promote" and result.decisions["d"] == "reject"
    again = analyse(
        list(reversed(records)), variants=variants, comparator="a", rope=0.02, min_pairs=20
    )
    assert again.model_dump_json() == result.model_dump_json()


def test_pareto_front() -> None:
    assert pareto_front({"cheap": (0.0, 0.5), "deep": (1.0, 0.9), "bad": (2.0, 0.4)}) == {
        "cheap",
        "deep",
    }


@pytest.mark.parametrize("pairs", [2, 3, 4, 9, 30, 100, 1000])
@pytest.mark.parametrize("sd", [0.05, 0.25, 1.0])
def test_paired_power_is_finite_bounded_and_monotone_from_001_to_5_sd(
    pairs: int, sd: float
) -> None:
    """``--effect 0.5`` printed ``nan%``: scipy's nct.cdf of the lower tail is NaN for a large
    noncentrality. Every effect from 0.01 to 5 SD has a power in [0, 1], never falling."""
    from workflows.campaign.stats import paired_power

    powers = [paired_power(d * sd, sd, pairs) for d in np.linspace(0.01, 5, 400)]
    assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in powers)
    assert all(later >= earlier - 1e-12 for earlier, later in itertools.pairwise(powers))
    assert paired_power(-0.5 * sd, sd, pairs) == paired_power(0.5 * sd, sd, pairs)
    assert powers[-1] > 0.99 or pairs < 4  # 5 SD is found at once with a few pairs


def test_paired_power_of_too_few_pairs_is_zero() -> None:
    from workflows.campaign.stats import paired_power

    assert paired_power(0.5, 0.25, 1) == 0.0  # one pair cannot be tested: never detected
    assert paired_power(0.5, 0.0, 10) == 1.0  # no spread: any difference is certain


def test_paired_power_matches_the_textbook_values() -> None:
    from workflows.campaign.stats import paired_power, pilot_diff_sd

    # One-sample/paired t-test, d = 0.5, n = 20, alpha 0.05 two-sided: power 0.5645.
    assert abs(paired_power(0.5, 1.0, 20) - 0.5645) < 5e-4
    assert abs(paired_power(0.05, 0.1, 34) - 0.8) < 0.02  # n = 34 gives ~80% for d = 0.5
    assert paired_power(0.05, 0.25, 400) > paired_power(0.05, 0.25, 100)
    records = matrix({("s0", seed): 0.1 * (seed % 2) for seed in range(10)})
    sd = pilot_diff_sd(records, "a")
    assert (
        sd is not None
        and abs(sd - float(np.std([0.1 * (i % 2) for i in range(10)], ddof=1))) < 1e-12
    )
