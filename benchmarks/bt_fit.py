"""Bradley-Terry fit speed: ours (Newton) vs scipy L-BFGS-B on the same objective, and the
bootstrap intervals of the final leaderboard.

Measures, never asserts. scipy runs with the spec's reference options (analytic gradient,
gtol=1e-12, ftol=1e-15, maxiter=10000) from 0; the score difference is on z-scored scores.
"Ours, from outcomes" adds what a caller pays for the id-level API (canonical sort, leaderboard).
The bootstrap table times ``workflows/tournament/bootstrap.py`` in CPU seconds of this process
(what a worker pays) on the paper profile's final ranking (20 candidates, 10-regular: 100
comparisons) and bigger ones, and checks a few refits against one-at-a-time fits of the
resampled comparisons.

    python -m benchmarks.bt_fit [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workflows.tournament.bootstrap import Design, bootstrap, refit_weighted
from workflows.tournament.bradley_terry import (
    Outcome,
    canonical_arrays,
    fit_arrays,
    leaderboard,
    zscore,
)
from workflows.tournament.judge_parse import Winner

LAMBDA = 0.01
CASES = ((200, 4_000), (1_000, 50_000))
# (candidates, degree): the paper profile's final ranking first.
BOOTSTRAP_CASES = ((20, 10), (40, 10), (64, 16))
RESAMPLES = 1_000


def make_case(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n) * 2.0
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    y = (rng.random(m) < 1 / (1 + np.exp(strength[b] - strength[a]))).astype(np.float64)
    y[rng.random(m) < 0.05] = 0.5
    return a, b, y


def scipy_fit(n: int, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> np.ndarray:
    def f_and_grad(s: np.ndarray) -> tuple[float, np.ndarray]:
        d = s[a] - s[b]
        f = 0.5 * LAMBDA * (s @ s) + np.logaddexp(0.0, d).sum() - y @ d
        r = 0.5 * (1.0 + np.tanh(0.5 * d)) - y
        return float(f), LAMBDA * s + np.bincount(a, r, n) - np.bincount(b, r, n)

    options = {"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000, "maxfun": 100_000}
    return minimize(f_and_grad, np.zeros(n), jac=True, method="L-BFGS-B", options=options).x


def gradient_norm(n: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, s: np.ndarray) -> float:
    r = 0.5 * (1.0 + np.tanh(0.5 * (s[a] - s[b]))) - y
    return float(np.linalg.norm(LAMBDA * s + np.bincount(a, r, n) - np.bincount(b, r, n)))


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: first-call allocations and BLAS threads
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def regular_outcomes(n: int, degree: int, seed: int) -> tuple[list[str], list[Outcome]]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n) * 1.5
    ids = [f"c{i:02d}" for i in range(n)]
    outcomes = []
    for offset in range(1, degree // 2 + 1):
        for i in range(n):
            j = (i + offset) % n
            a_wins = rng.random() < 1 / (1 + np.exp(strength[j] - strength[i]))
            outcomes.append(Outcome(ids[i], ids[j], "A" if a_wins else "B"))
    return ids, outcomes


def cpu_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def refit_error(ids: list[str], outcomes: list[Outcome]) -> float:
    """Largest score difference between batched refits and one-at-a-time fits (5 resamples)."""
    n = len(ids)
    _, a, b, y = canonical_arrays(ids, outcomes)
    counts = np.random.default_rng(1).multinomial(len(a), np.full(len(a), 1 / len(a)), size=5)
    batched = refit_weighted(
        Design(n, a, b, y), counts.astype(float), fit_arrays(n, a, b, y), LAMBDA
    )
    worst = 0.0
    for row, fitted in zip(counts, batched, strict=True):
        keep = np.repeat(np.arange(len(a)), row)
        alone = fit_arrays(n, a[keep], b[keep], y[keep], LAMBDA)
        worst = max(worst, float(np.max(np.abs(zscore(alone) - zscore(fitted)))))
    return worst


def bootstrap_table(repeats: int, cases: tuple[tuple[int, int], ...]) -> None:
    print(
        f"\n{'n':>5} {'comparisons':>11}  {'resamples':>9}  {'CPU s':>7}  "
        f"{'max |refit - alone|':>19}"
    )
    for n, degree in cases:
        ids, outcomes = regular_outcomes(n, degree, seed=n)
        seconds = cpu_seconds(
            lambda: bootstrap(ids, outcomes, lambda_=LAMBDA, resamples=RESAMPLES, seed=7),  # noqa: B023
            repeats,
        )
        used = bootstrap(ids, outcomes, lambda_=LAMBDA, resamples=RESAMPLES, seed=7).resamples
        print(
            f"{n:>5} {len(outcomes):>11,}  {used:>9,}  {seconds:>7.3f}  "
            f"{refit_error(ids, outcomes):>19.1e}"
        )
    print("(bootstrap: median CPU seconds of this process per leaderboard, 1,000 resamples asked)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeats = 1
    header = (
        f"{'n':>5} {'comparisons':>11}  {'ours ms':>8}  {'ours, from outcomes':>19}  "
        f"{'scipy ms':>8}  {'speed-up':>8}  {'max |score diff|':>16}  "
        f"{'|grad| ours':>11}  {'|grad| scipy':>12}"
    )
    print(header)
    # --smoke: the small case only (the same fits; the large one is ~2 s of scipy per repeat)
    for n, m in CASES[:1] if args.smoke else CASES:
        a, b, y = make_case(n, m, seed=n)
        ids = [f"c{i}" for i in range(n)]
        winners: dict[float, Winner] = {1.0: "A", 0.0: "B", 0.5: "tie"}
        outcomes = [
            Outcome(ids[i], ids[j], winners[v])
            for i, j, v in zip(a.tolist(), b.tolist(), y.tolist(), strict=True)
        ]
        repeats = args.repeats if n <= 200 else max(3, args.repeats // 3)
        ours = median_ms(lambda: fit_arrays(n, a, b, y, LAMBDA), repeats)  # noqa: B023
        full = median_ms(lambda: leaderboard(ids, outcomes, lambda_=LAMBDA), repeats)  # noqa: B023
        theirs = median_ms(lambda: scipy_fit(n, a, b, y), repeats)  # noqa: B023
        s_ours, s_scipy = fit_arrays(n, a, b, y, LAMBDA), scipy_fit(n, a, b, y)
        diff = np.max(np.abs(zscore(s_ours) - zscore(s_scipy)))
        g_ours, g_scipy = (gradient_norm(n, a, b, y, s) for s in (s_ours, s_scipy))
        print(
            f"{n:>5} {m:>11,}  {ours:>8.2f}  {full:>19.2f}  {theirs:>8.2f}  "
            f"{theirs / ours:>7.1f}x  {diff:>16.1e}  {g_ours:>11.1e}  {g_scipy:>12.1e}"
        )
    print("(medians of repeated runs in one process: compare ratios, not absolute times; the")
    print(" score difference is bounded by scipy's stopping point, see the gradient norms)")
    bootstrap_table(
        max(1, args.repeats // 3), BOOTSTRAP_CASES[:1] if args.smoke else BOOTSTRAP_CASES
    )


if __name__ == "__main__":
    main()
