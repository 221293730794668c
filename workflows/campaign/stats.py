"""The report's statistics: per-variant means, paired comparisons, decisions.

Pure (numpy, scipy.stats; no Temporal import): it runs in the report activity, never in workflow
code, and the same records always give the same numbers (every resample is seeded).

Pairing is by ``(scenario, seed)``: a variant's cell is compared with the comparator's cell on
the same scenario *and* seed (pairing by seed alone would mix scenarios). Per variant against
the comparator: Wilcoxon signed-rank (two-sided), Benjamini-Hochberg q-values across variants,
Cohen's d of the paired differences (d_z), a paired bootstrap CI of the mean difference,
Pr(delta > 0) and Pr(|delta| <= rope) from the bootstrap, the minimum detectable effect at 80%
power, and a decision:

- ``needs_more_data``: fewer pairs than ``max(6, min_pairs)``;
- ``promote``: q < 0.05, the 95% CI above 0 and the mean difference above the ROPE;
- ``reject``: q < 0.05, the CI below 0 and the mean difference below -ROPE;
- ``equivalent``: the whole 95% CI inside [-ROPE, ROPE];
- ``hold``: anything else (a difference the data cannot yet call).

The recommendation promotes the promoted variant with the largest mean difference (the cheaper
one on a tie) and otherwise keeps the comparator.

Every resample stream is derived from the analysis seed and the variant's id (never its place in
the list), so reordering the variants gives the very same intervals.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

from workflows.campaign.analysis import BOOTSTRAP_SEED, Analysis, Comparison, VariantSummary
from workflows.campaign.records import Decision, RunRecord, failed, was_cancelled

__all__ = [
    "ALPHA",
    "DEFAULT_DIFF_SD",
    "MIN_PAIRS_FLOOR",
    "Analysis",
    "Comparison",
    "Decision",
    "VariantSummary",
    "analyse",
    "bootstrap_mean_ci",
    "compare",
    "decide",
    "pair",
    "paired_power",
    "pareto_front",
    "pilot_diff_sd",
    "variant_rng",
]

ALPHA = 0.05
MIN_PAIRS_FLOOR = 6
RESAMPLES = 4000
POWER = 0.8


def bootstrap_mean_ci(
    values: Sequence[float] | np.ndarray, rng: np.random.Generator, resamples: int = RESAMPLES
) -> tuple[float, float, np.ndarray]:
    """The 95% percentile-bootstrap CI of the mean, and the bootstrap means themselves."""
    data = np.asarray(values, dtype=float)
    picks = rng.integers(0, len(data), size=(resamples, len(data)))
    means = data[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high), means


def variant_rng(seed: int, stream: str, variant: str) -> np.random.Generator:
    """The resample generator of one variant's ``stream`` (its mean, or its difference from a
    comparator) under the analysis ``seed``: keyed by the variant's id, not its position."""
    digest = hashlib.sha256(f"{stream}\0{variant}".encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([seed, *words])


def pair(
    records: Sequence[RunRecord], variant: str, comparator: str
) -> list[tuple[str, int, float, float]]:
    """``(scenario, seed, variant score, comparator score)`` for every pair both scored."""
    base = {
        (r.scenario, r.seed): r.score
        for r in records
        if r.variant == comparator and r.score is not None
    }
    out = []
    for r in records:
        if r.variant != variant or r.score is None:
            continue
        other = base.get((r.scenario, r.seed))
        if other is not None:
            out.append((r.scenario, r.seed, r.score, other))
    return sorted(out)


def compare(
    variant: str,
    comparator: str,
    diffs: Sequence[float],
    *,
    rope: float,
    rng: np.random.Generator,
) -> Comparison:
    """Everything but the q-value and decision for one variant's paired differences."""
    from scipy import stats  # imported here: scipy.stats costs every ponder process ~1 s

    n = len(diffs)
    out = Comparison(variant=variant, comparator=comparator, pairs=n)
    if n == 0:
        return out
    d = np.asarray(diffs, dtype=float)
    out.mean_delta = float(d.mean())
    out.wins, out.losses = int((d > 0).sum()), int((d < 0).sum())
    out.ties = n - out.wins - out.losses
    out.win_rate = (out.wins + 0.5 * out.ties) / n
    if np.all(d == 0):
        out.p_value = 1.0  # no difference at all: scipy refuses an all-zero sample
    else:
        out.p_value = float(stats.wilcoxon(d).pvalue)
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if sd < 1e-12 * max(1.0, abs(out.mean_delta)):
        sd = 0.0  # rounding noise of identical differences, not spread
    out.cohens_d = out.mean_delta / sd if sd > 0 else (0.0 if out.mean_delta == 0 else None)
    low, high, means = bootstrap_mean_ci(d, rng)
    out.ci_low, out.ci_high = low, high
    out.pr_positive = float((means > 0).mean())
    out.pr_rope = float((np.abs(means) <= rope).mean())
    z = stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(POWER)
    out.mde = float(z * sd / math.sqrt(n)) if n > 1 else None
    return out


def decide(c: Comparison, *, rope: float, min_pairs: int) -> tuple[Decision, str]:
    needed = max(MIN_PAIRS_FLOOR, min_pairs)
    if c.pairs < needed:
        return "needs_more_data", f"{c.pairs} pairs, fewer than the {needed} needed"
    assert c.mean_delta is not None and c.ci_low is not None and c.ci_high is not None
    q = c.q_value if c.q_value is not None else 1.0
    interval = f"delta {c.mean_delta:+.3f}, 95% CI [{c.ci_low:+.3f}, {c.ci_high:+.3f}], q={q:.3g}"
    if q < ALPHA and c.ci_low > 0 and c.mean_delta > rope:
        return "promote", f"better than the comparator beyond the ROPE ({interval})"
    if q < ALPHA and c.ci_high < 0 and c.mean_delta < -rope:
        return "reject", f"worse than the comparator beyond the ROPE ({interval})"
    if c.ci_low >= -rope and c.ci_high <= rope:
        return "equivalent", f"the whole CI lies inside the ROPE +-{rope:g} ({interval})"
    return "hold", f"no decisive difference yet ({interval})"


DEFAULT_DIFF_SD = 0.25
"""The stated default SD of paired score differences when no pilot is given (a score in [0, 1]
that moves by a quarter between variants on the same task and seed)."""


def paired_power(effect: float, sd: float, pairs: int, alpha: float = ALPHA) -> float:
    """Power of a two-sided paired t-test to detect a mean difference ``effect`` with ``pairs``
    pairs whose differences have standard deviation ``sd`` (noncentral t, exact): finite, in
    [0, 1] and non-decreasing in ``|effect|``. Fewer than 2 pairs cannot be tested (0).

    Both tails are survival functions: P(T > c) = sf(c; nc) and P(T < -c) = sf(c; -nc) (T is
    symmetric in its noncentrality). ``1 - cdf`` loses everything to rounding in the far tail,
    and scipy's ``nct.cdf(-c)`` for a large noncentrality answers NaN (``--effect 0.5`` printed
    ``nan%``)."""
    from scipy import stats  # imported here: scipy.stats costs every ponder process ~1 s

    if pairs < 2:
        return 0.0
    if sd <= 0:
        return 1.0
    df = pairs - 1
    noncentrality = abs(effect) * math.sqrt(pairs) / sd
    critical = stats.t.ppf(1 - alpha / 2, df)
    upper = stats.nct.sf(critical, df, noncentrality)
    lower = stats.nct.sf(critical, df, -noncentrality)
    power = float(upper + lower)
    return min(max(power, 0.0), 1.0) if math.isfinite(power) else 1.0


def pilot_diff_sd(records: Sequence[RunRecord], comparator: str) -> float | None:
    """The pooled SD of paired differences against ``comparator`` in a pilot's records."""
    diffs: list[float] = []
    for variant in sorted({r.variant for r in records} - {comparator}):
        diffs += [v - c for _, _, v, c in pair(records, variant, comparator)]
    return float(np.std(diffs, ddof=1)) if len(diffs) > 1 else None


def pareto_front(points: dict[str, tuple[float, float]]) -> set[str]:
    """Variants no other variant beats on both cost (lower) and score (higher)."""
    front = set()
    for name, (cost, score) in points.items():
        dominated = any(
            c2 <= cost and s2 >= score and (c2 < cost or s2 > score)
            for other, (c2, s2) in points.items()
            if other != name
        )
        if not dominated:
            front.add(name)
    return front


def analyse(
    records: Sequence[RunRecord],
    *,
    variants: Sequence[str],
    comparator: str,
    rope: float,
    min_pairs: int,
    seed: int = BOOTSTRAP_SEED,
) -> Analysis:
    """The whole analysis, deterministic for the same records and ``seed`` (the order of the
    records or of the variants does not matter)."""
    from scipy import stats  # imported here: scipy.stats costs every ponder process ~1 s

    records = sorted(records, key=lambda r: (r.variant, r.scenario, r.seed, r.run_id))
    summaries = []
    for variant in variants:
        mine = [r for r in records if r.variant == variant]
        scores = [r.score for r in mine if r.score is not None]
        total_cost = math.fsum(r.cost_usd for r in mine)
        mean = low = high = None
        if scores:
            mean = float(np.mean(scores))
            low, high, _ = bootstrap_mean_ci(scores, variant_rng(seed, "mean", variant))
        summaries.append(
            VariantSummary(
                variant=variant,
                cells=len(mine),
                scored=len(scores),
                failed=sum(1 for r in mine if failed(r)),
                cancelled=sum(1 for r in mine if was_cancelled(r)),
                mean=mean,
                ci_low=low,
                ci_high=high,
                mean_cost_usd=total_cost / len(mine) if mine else 0.0,
                total_cost_usd=total_cost,
                calls=sum(r.calls for r in mine),
            )
        )
    front = pareto_front(
        {s.variant: (s.mean_cost_usd, s.mean) for s in summaries if s.mean is not None}
    )
    for s in summaries:
        s.pareto = s.variant in front

    comparisons = []
    for variant in variants:
        if variant == comparator:
            continue
        diffs = [v - c for _, _, v, c in pair(records, variant, comparator)]
        rng = variant_rng(seed, f"delta from {comparator}", variant)
        comparisons.append(compare(variant, comparator, diffs, rope=rope, rng=rng))
    tested = [c for c in comparisons if c.p_value is not None]
    if tested:
        qs = stats.false_discovery_control([c.p_value for c in tested], method="bh")
        for c, q in zip(tested, qs, strict=True):
            c.q_value = float(q)
    for c in comparisons:
        c.decision, c.reason = decide(c, rope=rope, min_pairs=min_pairs)

    promoted = [c for c in comparisons if c.decision == "promote"]
    cost = {s.variant: s.mean_cost_usd for s in summaries}
    if promoted:
        best = max(promoted, key=lambda c: (c.mean_delta or 0.0, -cost.get(c.variant, 0.0)))
        recommended = best.variant
        recommendation = f"promote {best.variant}: {best.reason}"
    else:
        recommended = comparator
        undecided = [c.variant for c in comparisons if c.decision == "needs_more_data"]
        recommendation = f"keep {comparator}: no variant is promoted" + (
            f" ({', '.join(undecided)} need more data)" if undecided else ""
        )
    return Analysis(
        comparator=comparator,
        rope=rope,
        min_pairs=min_pairs,
        variants=summaries,
        comparisons=comparisons,
        decisions={c.variant: c.decision for c in comparisons},
        recommendation=recommendation,
        recommended_variant=recommended,
    )
