"""Whether the ranking's trust figures keep their promises, on a simulated judge.

Pure algorithms, no Temporal: the schedules, panel rules, fits and bootstrap runs use, with a
judge simulated as the sim provider's (``activities/sim_math.py``: hidden qualities
``q ~ N(0, 1)``, A picked with ``sigmoid(beta * (qA - qB))``, beta calibrated to a mean
accuracy; ``position_bias=P``: with probability P the first shown wins; ``length_bias=P``: with
probability P the longer one wins). Per setting, over ``--seeds`` worlds:

1. Coverage of the true quality by the 95% intervals (profile likelihood, as runs make them
   now), for a k-regular final round and for the adaptive schedule at its default budget, and
   by the percentile-bootstrap intervals of runs before, on the same regular rounds. The sim's
   judge is Bradley-Terry in ``beta * q``, the scale the fit estimates: a candidate's true
   score on the leaderboard's scale is ``beta * q``, centred and divided by the full fit's
   spread, as the intervals are. Target: within 2 points of 95% (the adaptive schedule's
   intervals are marked not valid in runs: this shows why). The same for a weak judge
   (accuracy ``WEAK_ACCURACY``), and, for both, the plain likelihood-ratio intervals runs had
   before a separated record's edge became its exact one (``likelihood_intervals``), with the
   coverage of the undefeated and winless alone.
2. Rank-interval coverage: the share of candidates whose true rank lies in
   ``[rank_high, rank_low]`` (regular schedule). Target: at least 95%.
3. A three-judge panel with position biases 0, 0.3 and 0.6, listed in each of the 6 orders:
   the share of the panel's decisive verdicts won by the pair's first-shown candidate.
   Target: 0.5 +/- 0.03 for every order.
4. Kendall tau between the final ranking and the true qualities with ``length_bias=0.3``
   (lengths drawn independently of quality), fitted without and with length control, against
   the same judge without the bias, with every pair judged once and four times. Target:
   length control recovers at least half of the tau the bias costs. Length control is the
   judge's own model, a mixture (with a share of its verdicts the longer wins, else
   Bradley-Terry), the share and the scores averaged over their posterior
   (``length_mixture``; its mean share is printed beside it). Beside it: the additive
   log-odds term runs fitted before it (``style_control``), the wrong shape for a mixture,
   which costs most with every pair judged once; the plain fit of the verdicts length did not
   decide (an oracle: what is lost with the rest is information); and the mixture with its
   weight known and fitted jointly with the scores, which puts it low (the scores take up
   part of what length did).

    python -m benchmarks.ranking_trust --seeds 50
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from activities.sim_math import beta_for_accuracy, draw_quality, p_a_wins
from workflows.tournament.adaptive import champion_batch, opening, opening_sizes, round_rng
from workflows.tournament.bootstrap import IntervalMethod, bootstrap, rank_intervals
from workflows.tournament.bradley_terry import fit_arrays, leaderboard
from workflows.tournament.judge_parse import Outcome, Winner
from workflows.tournament.judge_stats import rate
from workflows.tournament.likelihood_intervals import profile_intervals, separated
from workflows.tournament.profiles import ADAPTIVE_SHARE, adaptive_pairs_budget
from workflows.tournament.rng import phase_rng
from workflows.tournament.schedule import ScheduledPair, k_regular_schedule
from workflows.tournament.style_control import arrays, controlled_fit
from workflows.tournament.verdicts import Slot, call_slots, combine

N = 12
M = 6  # the final round's degree: 36 pairs over 12 candidates
ACCURACY = 0.85
WEAK_ACCURACY = 0.75
LAMBDA = 0.01
BATCH = 8
PANEL_BIASES = (0.0, 0.3, 0.6)
LENGTH_BIAS = 0.3
LENGTH_ROUNDS = (1, 4)
"""Length setting: every pair judged this many times (66 and 264 comparisons over 12)."""
CHARS = (200, 1200)
COVERAGE_TARGET = 0.95
PANEL_TOLERANCE = 0.03


def _judge(
    quality: dict[str, float],
    beta: float,
    rng: random.Random,
    *,
    position_bias: float = 0.0,
    length_bias: float = 0.0,
    lengths: dict[str, int] | None = None,
    by_length: list[bool] | None = None,
) -> Any:
    """One call's verdict on ``slot``, in its shown order, as the sim judge decides it; with
    ``by_length``, whether length decided it is appended there."""

    def verdict(slot: Slot) -> Winner:
        a, b = slot.presented_a, slot.presented_b
        if position_bias and rng.random() < position_bias:
            return "A"
        decided = bool(
            length_bias and lengths and lengths[a] != lengths[b] and rng.random() < length_bias
        )
        if by_length is not None:
            by_length.append(decided)
        if decided and lengths:
            return "A" if lengths[a] > lengths[b] else "B"
        return "A" if rng.random() < p_a_wins(quality[a], quality[b], beta) else "B"

    return verdict


def _one_judge(pairs: Sequence[ScheduledPair], verdict: Any) -> list[Outcome]:
    return [
        Outcome(p.presented_a, p.presented_b, verdict(Slot("j", p.presented_a, p.presented_b)))
        for p in pairs
    ]


def _world(seed: int, accuracy: float = ACCURACY) -> tuple[list[str], dict[str, float], float]:
    world = random.Random(seed)
    ids = [f"c{i:02d}" for i in range(N)]
    return ids, {c: draw_quality(world) for c in ids}, beta_for_accuracy(accuracy)


def _adaptive(ids: list[str], seed: int, verdict: Any) -> list[Outcome]:
    """The adaptive schedule a run follows: an opening matching, then champion pairs, at the
    default budget (``ADAPTIVE_SHARE`` of the k-regular pairs)."""
    budget = adaptive_pairs_budget(N * M // 2, N, ADAPTIVE_SHARE)
    outcomes: list[Outcome] = []
    for round_no, size in enumerate(opening_sizes(N, budget, BATCH)):
        rng = round_rng(seed, "final_judging", round_no)
        if round_no == 0:
            pairs = opening(ids, rng, budget=size)
        else:
            pairs = champion_batch(ids, outcomes, rng=rng, size=size)
        if not pairs:
            break
        outcomes += _one_judge(pairs, verdict)
    return outcomes


Coverage = tuple[int, int, int, float, int, int]
"""(candidates covered, candidates, candidates whose true rank is in their rank interval, the
intervals' widths summed on the leaderboard's scale, undefeated or winless candidates covered,
undefeated or winless candidates)."""
Intervals = IntervalMethod | Literal["plain"]
"""A run's construction, or ``"plain"``: the likelihood-ratio edges alone (runs before)."""


def _coverage(
    ids: list[str],
    quality: dict[str, float],
    beta: float,
    outcomes: list[Outcome],
    seed: int,
    intervals: Intervals = "likelihood",
) -> Coverage:
    arr = arrays(ids, outcomes)
    full = fit_arrays(len(arr.ids), arr.a, arr.b, arr.y, LAMBDA)
    spread = statistics.pstdev(full.tolist()) or 1.0
    if intervals == "plain":
        # As ``bootstrap`` reports them: on the leaderboard's scale, widened to the point.
        raw_low, raw_high = profile_intervals(
            len(arr.ids), arr.a, arr.b, arr.y, full, lambda_=LAMBDA, separated_edges=False
        )
        point = (full - full.mean()) / spread
        lows, highs = np.minimum(raw_low / spread, point), np.maximum(raw_high / spread, point)
        low = dict(zip(arr.ids, lows.tolist(), strict=True))
        high = dict(zip(arr.ids, highs.tolist(), strict=True))
    else:
        result = bootstrap(
            ids, outcomes, lambda_=LAMBDA, resamples=RESAMPLES, seed=seed, intervals=intervals
        )
        low, high = result.low, result.high
    true = [beta * quality[c] for c in arr.ids]
    mean = statistics.fmean(true)
    hits = [low[c] <= (t - mean) / spread <= high[c] for c, t in zip(arr.ids, true, strict=True)]
    extreme = separated(len(arr.ids), arr.a, arr.b, arr.y, np.ones(len(arr.a))) != 0
    ranks = rank_intervals(low, high)
    truth = {c: r + 1 for r, c in enumerate(sorted(ids, key=lambda c: -quality[c]))}
    in_rank = sum(ranks[c][0] <= truth[c] <= ranks[c][1] for c in ids)
    width = sum(high[c] - low[c] for c in ids)
    return (
        sum(hits),
        len(ids),
        in_rank,
        width,
        sum(h for h, e in zip(hits, extreme, strict=True) if e),
        int(extreme.sum()),
    )


def coverage_seed(seed: int) -> dict[str, Coverage]:
    out = {}
    for accuracy, name in ((ACCURACY, "regular"), (WEAK_ACCURACY, "weak")):
        ids, quality, beta = _world(seed, accuracy)
        regular = k_regular_schedule(ids, M, phase_rng(seed, "final_judging"))
        verdict = _judge(quality, beta, random.Random(f"{seed}:regular"))
        judged = _one_judge(regular, verdict)
        out[name] = _coverage(ids, quality, beta, judged, seed)
        out[f"{name} plain"] = _coverage(ids, quality, beta, judged, seed, "plain")
        if accuracy == ACCURACY:
            out["percentile"] = _coverage(ids, quality, beta, judged, seed, "percentile")
            verdict = _judge(quality, beta, random.Random(f"{seed}:adaptive"))
            adaptive = _adaptive(ids, seed, verdict)
            out["adaptive"] = _coverage(ids, quality, beta, adaptive, seed)
    return out


def panel_seed(args: tuple[int, tuple[float, ...]]) -> tuple[int, int]:
    """(panel verdicts won by the first shown, decisive panel verdicts) for one ordering."""
    seed, biases = args
    ids, quality, beta = _world(seed)
    pairs = k_regular_schedule(ids, M, phase_rng(seed, "final_judging"))
    judges = [f"j{i}" for i in range(len(biases))]
    rng = random.Random(f"{seed}:panel:{biases}")
    verdicts = {
        j: _judge(quality, beta, rng, position_bias=bias)
        for j, bias in zip(judges, biases, strict=True)
    }
    first = decisive = 0
    for index, pair in enumerate(pairs):
        calls = [
            _Call(s.judge, s.presented_a, s.presented_b, verdicts[s.judge](s))
            for s in call_slots(pair, judges, "one", index)
        ]
        winner = combine(pair, calls)
        if winner != "tie":
            decisive += 1
            first += winner == "A"
    return first, decisive


@dataclass(frozen=True)
class _Call:
    judge: str
    presented_a: str
    presented_b: str
    winner: str


def _tau(scores: dict[str, float], quality: dict[str, float]) -> float:
    ids = sorted(scores)
    concordant = 0
    for x, y in itertools.combinations(ids, 2):
        s, q = scores[x] - scores[y], quality[x] - quality[y]
        concordant += 1 if s * q > 0 else -1 if s * q < 0 else 0
    return concordant / (len(ids) * (len(ids) - 1) / 2)


def _mixture_fit(
    ids: list[str], outcomes: list[Outcome], lengths: dict[str, int], weight: float | None
) -> dict[str, float]:
    """Scores under the sim judge's own length model, a mixture: A wins with chance
    ``(1 - weight) * sigmoid(s_A - s_B) + weight * [A is longer]`` (``weight`` None: fitted
    too), by maximum likelihood with the leaderboard's ridge."""
    index = {c: i for i, c in enumerate(ids)}
    a = np.array([index[o.presented_a] for o in outcomes])
    b = np.array([index[o.presented_b] for o in outcomes])
    y = np.array([o.winner == "A" for o in outcomes], float)
    longer = np.array([lengths[o.presented_a] > lengths[o.presented_b] for o in outcomes], float)
    n = len(ids)

    def loss(x: Any) -> tuple[float, Any]:
        s = x[:n]
        w = weight if weight is not None else 1.0 / (1.0 + math.exp(-x[n]))
        sig = 1 / (1 + np.exp(s[b] - s[a]))
        p = np.clip((1 - w) * sig + w * longer, 1e-12, 1 - 1e-12)
        value = float(-(y @ np.log(p) + (1 - y) @ np.log1p(-p)) + 0.5 * LAMBDA * s @ s)
        dp = (1 - y) / (1 - p) - y / p  # the loss's derivative in each p
        dd = dp * (1 - w) * sig * (1 - sig)
        grad = np.bincount(a, dd, n) - np.bincount(b, dd, n) + LAMBDA * s
        if weight is not None:
            return value, grad
        return value, np.append(grad, dp @ (longer - sig) * w * (1 - w))

    start = np.zeros(n if weight is not None else n + 1)
    if weight is None:
        start[n] = -1.0
    x = minimize(loss, start, jac=True, method="L-BFGS-B").x
    return {c: float(x[index[c]]) for c in ids}


def length_seed(args: tuple[int, int]) -> tuple[float, ...]:
    """Kendall tau: no bias (plain fit), bias (plain fit), bias (the additive length term);
    the length coefficient that fit found; and, for what any fit could recover, tau with the
    verdicts length decided dropped (an oracle) and under the judge's own mixture model, its
    weight known and fitted jointly; then length control as runs fit it now (the mixture,
    ``length_mixture``) and its share. Every pair judged ``rounds`` times."""
    seed, rounds = args
    ids, quality, beta = _world(seed)
    world = random.Random(f"{seed}:lengths")
    lengths = {c: world.randint(*CHARS) for c in ids}
    pairs = [
        p
        for r in range(rounds)
        for p in k_regular_schedule(ids, N - 1, phase_rng(seed, f"final_judging:{r}"))
    ]
    fair = _one_judge(pairs, _judge(quality, beta, random.Random(f"{seed}:fair")))
    by_length: list[bool] = []
    biased_judge = _judge(
        quality,
        beta,
        random.Random(f"{seed}:biased"),
        length_bias=LENGTH_BIAS,
        lengths=lengths,
        by_length=by_length,
    )
    biased = _one_judge(pairs, biased_judge)

    def plain(outcomes: list[Outcome]) -> dict[str, float]:
        return {r.candidate_id: r.score for r in leaderboard(ids, outcomes, lambda_=LAMBDA)}

    controlled = controlled_fit(ids, biased, lengths=lengths, lambda_=LAMBDA)
    gamma = controlled.length.coefficient if controlled.length else 0.0
    mixture = controlled_fit(ids, biased, lengths=lengths, lambda_=LAMBDA, model="mixture")
    share = mixture.length.coefficient if mixture.length else 0.0
    return (
        _tau(plain(fair), quality),
        _tau(plain(biased), quality),
        _tau(controlled.scores, quality),
        gamma,
        _tau(plain([o for o, x in zip(biased, by_length, strict=True) if not x]), quality),
        _tau(_mixture_fit(ids, biased, lengths, LENGTH_BIAS), quality),
        _tau(_mixture_fit(ids, biased, lengths, None), quality),
        _tau(mixture.scores, quality),
        share,
    )


RESAMPLES = 500


def main(argv: Sequence[str] | None = None) -> None:
    global RESAMPLES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50, help="worlds per setting (default 50)")
    parser.add_argument(
        "--resamples", type=int, default=RESAMPLES, help=f"bootstrap (default {RESAMPLES})"
    )
    parser.add_argument("--workers", type=int, default=None, help="processes (default: CPUs)")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds, args.workers, args.resamples = 2, 1, 100
    RESAMPLES = args.resamples
    started = time.perf_counter()
    seeds = range(args.seeds)
    orderings = list(itertools.permutations(PANEL_BIASES))
    with ProcessPoolExecutor(
        args.workers, initializer=_set_resamples, initargs=(RESAMPLES,)
    ) as pool:
        coverage = list(pool.map(coverage_seed, seeds))
        panel = list(pool.map(panel_seed, [(s, o) for o in orderings for s in seeds]))
        lengths = {
            rounds: list(pool.map(length_seed, [(s, rounds) for s in seeds]))
            for rounds in LENGTH_ROUNDS
        }
    print(
        f"n={N} candidates, judge accuracy {ACCURACY}, {args.seeds} seeds per setting, "
        f"{RESAMPLES} bootstrap resamples, lambda={LAMBDA}"
    )

    print(f"\n1-2. coverage of the true quality by the 95% intervals (target {COVERAGE_TARGET:.0%}"
          " +/- 2 points), and of the true rank by the rank intervals")  # fmt: skip
    for name, label in (
        ("regular", f"{M}-regular, {N * M // 2} pairs"),
        ("regular plain", f"{M}-regular, plain likelihood ratio (runs before)"),
        ("percentile", f"{M}-regular, percentile bootstrap (runs before that)"),
        (
            "adaptive",
            f"adaptive, {adaptive_pairs_budget(N * M // 2, N, ADAPTIVE_SHARE)} pairs "
            "(intervals marked not valid)",
        ),
        ("weak", f"judge accuracy {WEAK_ACCURACY}, {M}-regular"),
        ("weak plain", f"judge accuracy {WEAK_ACCURACY}, plain likelihood ratio"),
    ):
        covered = sum(c[name][0] for c in coverage)
        total = sum(c[name][1] for c in coverage)
        in_rank = sum(c[name][2] for c in coverage)
        width = sum(c[name][3] for c in coverage) / total
        extremes = rate(sum(c[name][4] for c in coverage), sum(c[name][5] for c in coverage))
        q, r = rate(covered, total), rate(in_rank, total)
        met = abs((q.rate or 0) - COVERAGE_TARGET) <= 0.02
        print(
            f"  {label:<52} quality {_pct(q.rate)} [{_pct(q.low)}, {_pct(q.high)}] "
            f"({'meets' if met else 'misses'} the target); rank {_pct(r.rate)} "
            f"({'meets' if (r.rate or 0) >= COVERAGE_TARGET else 'misses'} >= 95%); "
            f"mean width {width:.2f}; undefeated or winless {_pct(extremes.rate)} "
            f"of {extremes.total}"
        )

    print(
        f"\n3. a three-judge panel, position biases {PANEL_BIASES} in every order: the share "
        f"of its decisive verdicts won by the first shown (target 0.5 +/- {PANEL_TOLERANCE})"
    )
    worst = 0.0
    for o_no, order in enumerate(orderings):
        block = panel[o_no * args.seeds : (o_no + 1) * args.seeds]
        share = rate(sum(f for f, _ in block), sum(d for _, d in block))
        worst = max(worst, abs((share.rate or 0.5) - 0.5))
        print(
            f"  judges {list(order)}: {share.rate:.3f} [{share.low:.3f}, {share.high:.3f}] "
            f"of {share.total}"
        )
    print(f"  largest distance from 0.5: {worst:.3f} "
          f"({'meets' if worst <= PANEL_TOLERANCE else 'misses'} the target)")  # fmt: skip

    print(
        f"\n4. Kendall tau with the true qualities, length_bias={LENGTH_BIAS}, lengths "
        f"{CHARS[0]}-{CHARS[1]} chars drawn apart from quality; target: length control "
        "recovers at least half of the tau lost"
    )
    for rounds, taus in lengths.items():
        fair, biased, additive, gammas, oracle, known, fitted, mixture, mean_share = (
            statistics.fmean(col) for col in zip(*taus, strict=True)
        )
        lost = fair - biased
        recovered = (mixture - biased) / lost if lost > 0 else float("nan")
        gain = [t[7] - t[1] for t in taus]
        se = statistics.stdev(gain) / math.sqrt(len(gain)) if len(gain) > 1 else 0.0
        print(f"  every pair judged {rounds}x ({rounds * N * (N - 1) // 2} comparisons):")
        print(f"    no bias, plain fit:          {fair:.3f}")
        print(f"    length bias, plain fit:      {biased:.3f}")
        print(
            f"    length bias, length control: {mixture:.3f} (controlled - plain "
            f"{mixture - biased:+.3f} +/- {se:.3f} s.e.; the judge's mixture, mean share "
            f"{mean_share:.2f})"
        )
        print(
            f"    recovered: {recovered:.0%} of the {lost:.3f} lost "
            f"({'meets' if recovered >= 0.5 else 'misses'} the target)"
        )
        for label, tau in (
            (f"additive log-odds term (mean {gammas:+.2f}; runs before)", additive),
            ("verdicts length decided dropped (oracle)", oracle),
            (f"the judge's mixture, weight {LENGTH_BIAS} known", known),
            ("the judge's mixture, weight fitted jointly", fitted),
        ):
            part = (tau - biased) / lost if lost > 0 else float("nan")
            print(f"    {label + ':':<52} {tau:.3f} ({part:.0%} of the loss)")
    print(f"({time.perf_counter() - started:.1f} s)")


def _set_resamples(resamples: int) -> None:
    global RESAMPLES
    RESAMPLES = resamples


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


if __name__ == "__main__":
    main()
