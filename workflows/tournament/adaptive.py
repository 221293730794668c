"""Adaptive pair schedule: spend judge calls where the top of the ranking is uncertain.

The opening is sparse: a random perfect matching (``ceil(n/2)`` calls: with n odd, one
candidate plays twice) gives every candidate one result. After it, pairs are chosen in batches
of the phase's concurrency by **champion pairs**: from a Laplace approximation of the
Bradley-Terry posterior (the MAP of the fit's objective under a N(0, 1/prior_precision) prior,
covariance ``H^-1``, ``H`` the Hessian there), ``CHAMPION_DRAWS`` posterior draws estimate each
candidate's probability ``p_i`` of being the best, and the batch takes the open pairs with the
largest ``p_i * p_j`` (the chance that the pair is the top two), greedily. Early on that pairs
winners with winners, like a knockout; later it re-judges the few contenders. Candidates out of
the running get no calls, which is what top-1 recovery needs: at judge accuracy 0.85 over 20
candidates, 30 calls find the best as often as a 10-regular schedule's 100
(``benchmarks/ranking_accuracy.py`` prints the table).

The earlier rule (a random 2-regular first round, then top-two Thompson sampling; Russo, 2016)
stays as ``first_round`` and ``next_batch``: runs started before the sparse opening keep it
(``workflow.patched``), and the benchmark shows both.

Rules: no self pairs; an unordered pair is judged at most ``max_repeats`` times (default 2, once
in each presentation order: a judge at temperature 0 repeats itself given the same prompt); no
pair twice in one batch; the call budget bounds everything. A pair is shown in the order it was
shown less often so far (a coin when even), so a repeat shows the judge the other order.

The fit is the one Bradley-Terry core (``bradley_terry.fit_arrays``, dense Newton, numpy) at the
prior's precision, and the Hessian's Cholesky factor there. numpy, so workflows never call
``champion_batch`` or ``next_batch`` themselves: they run in the ``adaptive_batch`` local
activity, whose result history keeps, so a replay on a differently built worker reads the same
batch. Inputs are put in a canonical order, so the same outcomes, ids and RNG give the same
batch.
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
    "CHAMPION_DRAWS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_PRIOR_PRECISION",
    "Posterior",
    "batch_sizes",
    "champion_batch",
    "champion_probabilities",
    "first_round",
    "fit_posterior",
    "next_batch",
    "opening",
    "opening_sizes",
    "round_rng",
]

DEFAULT_BATCH_SIZE = 8
DEFAULT_PRIOR_PRECISION = 0.3
CHAMPION_DRAWS = 256


def opening(
    ids: Sequence[str], rng: random.Random, *, budget: int | None = None
) -> list[ScheduledPair]:
    """A random perfect matching (n odd: the odd one out also meets a random other), each pair
    shown in a coin's order; cut to ``budget`` calls."""
    order = list(ids)
    rng.shuffle(order)
    pairs = [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
    if len(order) % 2 and len(order) > 1:
        pairs.append((order[-1], order[rng.randrange(len(order) - 1)]))
    schedule = []
    for a, b in pairs:
        swap = rng.random() < 0.5
        schedule.append(ScheduledPair(a, b, b if swap else a, a if swap else b))
    return schedule if budget is None else schedule[: max(budget, 0)]


def opening_sizes(n: int, budget: int, batch_size: int = DEFAULT_BATCH_SIZE) -> list[int]:
    """Calls per round after the sparse opening: ``ceil(n/2)``, then ``batch_size`` batches."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    if n < 2:
        return []
    first = min(max(budget, 0), (n + 1) // 2)
    sizes = [first] if first else []
    left = budget - first
    while left > 0:
        sizes.append(min(batch_size, left))
        left -= sizes[-1]
    return sizes


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


def champion_probabilities(
    posterior: Posterior, rng: random.Random, draws: int = CHAMPION_DRAWS
) -> FloatArray:
    """``P(i best)`` per candidate (in ``posterior.ids`` order): the share of ``draws`` draws
    from N(mean, H^-1) in which it scores highest (the first of equal scores)."""
    n = len(posterior.ids)
    z = np.array([[rng.gauss(0.0, 1.0) for _ in range(n)] for _ in range(draws)])
    samples = posterior.mean + np.linalg.solve(posterior.chol.T, z.T).T
    return np.bincount(np.argmax(samples, axis=1), minlength=n) / draws


def champion_batch(
    ids: Sequence[str],
    outcomes: Sequence[Outcome],
    *,
    rng: random.Random,
    size: int = DEFAULT_BATCH_SIZE,
    max_repeats: int = 2,
    prior_precision: float = DEFAULT_PRIOR_PRECISION,
    draws: int = CHAMPION_DRAWS,
) -> list[ScheduledPair]:
    """Up to ``size`` open pairs with the largest ``P(i best) * P(j best)``; fewer once every
    pair is at its cap. ``P`` counts the posterior draws in which each candidate is on top."""
    if max_repeats < 1:
        raise ValueError(f"max_repeats must be >= 1 (got {max_repeats})")
    posterior = fit_posterior(ids, outcomes, lambda_=prior_precision)
    order = posterior.ids
    n = len(order)
    best = champion_probabilities(posterior, rng, draws)
    played: Counter[frozenset[str]] = Counter()
    shown: Counter[tuple[str, str]] = Counter()
    for o in outcomes:
        played[frozenset((o.presented_a, o.presented_b))] += 1
        shown[o.presented_a, o.presented_b] += 1
    ranked = []
    for i in range(n):
        for j in range(i + 1, n):
            if played[frozenset((order[i], order[j]))] < max_repeats:
                # Ties (e.g. pairs no draw puts on top) go to the likelier single champions,
                # then to a coin: never to id order.
                weight = float(best[i] * best[j]), float(best[i] + best[j]), rng.random()
                ranked.append((weight, i, j))
    ranked.sort(reverse=True)
    batch: list[ScheduledPair] = []
    for _weight, i, j in ranked[: max(size, 0)]:
        a, b = order[i], order[j]  # ids sorted: a < b
        swap = shown[b, a] < shown[a, b] or (shown[a, b] == shown[b, a] and rng.random() < 0.5)
        batch.append(ScheduledPair(a, b, b, a) if swap else ScheduledPair(a, b, a, b))
    return batch
