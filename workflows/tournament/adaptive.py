"""Adaptive pair schedule: spend judge calls where the top of the ranking is uncertain.

A random 2-regular first round gives every candidate a result. After it, pairs are chosen in
batches of the phase's concurrency by top-two Thompson sampling (Russo, 2016) from a Laplace
approximation of the Bradley-Terry posterior: the MAP of the final fit's objective under a
N(0, 1/prior_precision) prior, and the covariance ``H^-1``, ``H`` the Hessian there. For each
slot a posterior draw names a *leader* (its argmax) and fresh draws name a *challenger* (the
argmax of the first draw whose argmax is not the leader, else the best other); they meet.
Candidates clearly out of the running are almost never drawn on top, so calls go to the
contenders, which is what top-1 recovery needs. ``benchmarks/ranking_accuracy.py`` measures it
against k-regular at equal and at half the calls.

Rules: no self pairs; an unordered pair is judged at most ``max_repeats`` times (default 2, once
in each presentation order: a judge at temperature 0 repeats itself given the same prompt); no
pair twice in one batch; the call budget bounds everything. A pair is shown in the order it was
shown less often so far (a coin when even), so a repeat shows the judge the other order.

The fit is the one Bradley-Terry core (``bradley_terry.fit_arrays``, dense Newton, numpy) at the
prior's precision, and the Hessian's Cholesky factor there. numpy, so workflows never call
``next_batch`` themselves: it runs in the ``adaptive_batch`` local activity, whose result history
keeps, so a replay on a differently built worker reads the same batch. Inputs are put in a
canonical order, so the same outcomes, ids and RNG give the same batch.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from workflows.tournament.bradley_terry import FloatArray, canonical_arrays, fit_arrays, hessian
from workflows.tournament.judge_parse import Outcome
from workflows.tournament.rng import phase_rng
from workflows.tournament.schedule import ScheduledPair, k_regular_schedule

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_PRIOR_PRECISION",
    "Posterior",
    "batch_sizes",
    "first_round",
    "fit_posterior",
    "next_batch",
    "round_rng",
]

DEFAULT_BATCH_SIZE = 8
DEFAULT_PRIOR_PRECISION = 0.3


def first_round(
    ids: Sequence[str], rng: random.Random, *, budget: int | None = None
) -> list[ScheduledPair]:
    """A random 2-regular schedule (1-regular for two candidates), cut to ``budget`` calls."""
    n = len(ids)
    if n < 2:
        return []
    schedule = k_regular_schedule(ids, 2 if n > 2 else 1, rng)
    return schedule if budget is None else schedule[: max(budget, 0)]


def batch_sizes(n: int, budget: int, batch_size: int = DEFAULT_BATCH_SIZE) -> list[int]:
    """Calls per round: the first round, then ``batch_size`` batches until the budget is spent.

    A batch may come back shorter once every pair is at its repeat cap; stop at an empty one.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    if n < 2:
        return []
    first = min(max(budget, 0), n if n > 2 else n // 2)
    sizes = [first] if first else []
    left = budget - first
    while left > 0:
        sizes.append(min(batch_size, left))
        left -= sizes[-1]
    return sizes


@dataclass(frozen=True, slots=True)
class Posterior:
    """Laplace approximation: MAP scores and the Cholesky factor ``L`` of the Hessian H = L L^T."""

    ids: tuple[str, ...]
    mean: FloatArray
    chol: FloatArray

    def sample(self, rng: random.Random) -> list[float]:
        """One draw from N(mean, H^-1): mean + L^-T z (z from ``rng``, so seeded draws repeat)."""
        z = np.array([rng.gauss(0.0, 1.0) for _ in range(len(self.mean))])
        return [float(v) for v in self.mean + np.linalg.solve(self.chol.T, z)]


def fit_posterior(
    ids: Sequence[str],
    outcomes: Iterable[Outcome],
    *,
    lambda_: float = 0.01,
    tol: float = 1e-7,
    max_iter: int = 100,
) -> Posterior:
    """MAP Bradley-Terry scores (the numpy core) and the Hessian's Cholesky factor there."""
    if lambda_ <= 0:
        raise ValueError(f"lambda must be > 0 (got {lambda_})")
    order, a, b, y = canonical_arrays(ids, outcomes)
    s = fit_arrays(len(order), a, b, y, lambda_, tol=tol, max_iter=max_iter, method="dense")
    chol = np.asarray(np.linalg.cholesky(hessian(s, a, b, lambda_)), dtype=np.float64)
    return Posterior(ids=tuple(order), mean=s, chol=chol)


def _argmax(values: Sequence[float], allowed: Iterable[int]) -> int | None:
    best, best_value = None, -math.inf
    for i in allowed:
        if values[i] > best_value:
            best, best_value = i, values[i]
    return best


def round_rng(seed: int | str, phase_key: str, round_no: int) -> random.Random:
    """The generator of one adaptive round (round 0 is the first round)."""
    return phase_rng(seed, f"{phase_key}:adaptive:{round_no}")


def next_batch(
    ids: Sequence[str],
    outcomes: Sequence[Outcome],
    *,
    rng: random.Random,
    size: int = DEFAULT_BATCH_SIZE,
    max_repeats: int = 2,
    prior_precision: float = DEFAULT_PRIOR_PRECISION,
    challenger_tries: int = 16,
) -> list[ScheduledPair]:
    """Up to ``size`` pairs by top-two Thompson sampling; fewer once every pair is at its cap.

    ``prior_precision`` is the posterior's prior (N(0, 1/precision) per score). It is not the
    final fit's lambda on purpose: lambda = 0.01 is a ridge that keeps the fit finite, and as a
    belief it would make every barely-judged candidate a plausible champion that soaks up calls.
    0.3 (sd ~1.8 logits) measured best or within noise of the best in
    ``benchmarks/ranking_accuracy.py``. The challenger is redrawn up to ``challenger_tries``
    times until its draw's argmax differs from the leader (Russo's top-two rule).
    """
    if max_repeats < 1:
        raise ValueError(f"max_repeats must be >= 1 (got {max_repeats})")
    posterior = fit_posterior(ids, outcomes, lambda_=prior_precision)
    order = posterior.ids
    n = len(order)
    played: Counter[frozenset[str]] = Counter()
    shown: Counter[tuple[str, str]] = Counter()
    for o in outcomes:
        played[frozenset((o.presented_a, o.presented_b))] += 1
        shown[o.presented_a, o.presented_b] += 1
    chosen: set[frozenset[str]] = set()

    def open_pair(i: int, j: int) -> bool:
        key = frozenset((order[i], order[j]))
        return i != j and key not in chosen and played[key] < max_repeats

    batch: list[ScheduledPair] = []
    for _ in range(size):
        first = posterior.sample(rng)
        leaders = sorted(range(n), key=lambda i: (-first[i], i))
        second = posterior.sample(rng)
        for _ in range(challenger_tries):
            if _argmax(second, range(n)) != leaders[0]:
                break
            second = posterior.sample(rng)
        pair = None
        for leader in leaders:
            challenger = _argmax(second, (j for j in range(n) if open_pair(leader, j)))
            if challenger is not None:
                pair = (order[leader], order[challenger])
                break
        if pair is None:
            break  # every pair has reached its cap
        key = frozenset(pair)
        chosen.add(key)
        a, b = sorted(pair)
        # Show the order seen less often, so a repeat lets the judge see both; a coin otherwise.
        swap = shown[b, a] < shown[a, b] or (shown[a, b] == shown[b, a] and rng.random() < 0.5)
        batch.append(ScheduledPair(a, b, b, a) if swap else ScheduledPair(a, b, a, b))
    return batch
