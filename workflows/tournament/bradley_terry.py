"""Bradley-Terry scores and the leaderboard.

Minimise ``0.5*lambda*|s|^2 + sum softplus(s_a - s_b) - y*(s_a - s_b)`` over outcomes
``(a presented A, b presented B, y = 1 | 0 | 0.5)`` by damped Newton from ``s = 0`` until the
gradient norm is below ``tol`` (1e-7; one more step usually takes it to ~1e-12, which the 1e-6
agreement with an independent fit needs), then z-score. The objective is strictly convex
(lambda > 0) and its Hessian is ``lambda*I`` plus a weighted graph Laplacian, so Newton needs a
handful of steps: up to 64 candidates solve the dense system; more use conjugate gradients with
Hessian-vector products straight from the comparison list (never forming the n x n matrix).

numpy is used, so this runs in a (local) activity, never in workflow code. Outcomes are fitted in
a canonical order (candidates by id, outcomes by ``(a, b, y)``): the same comparisons give
bit-identical scores whatever order they completed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from workflows.tournament.judge_parse import Outcome

__all__ = [
    "DENSE_MAX_N",
    "LeaderboardRow",
    "Outcome",
    "canonical_arrays",
    "fit_arrays",
    "fit_scores",
    "hessian",
    "jacobi_cg",
    "leaderboard",
    "objective",
    "zscore",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

TIE_EPS = 1e-9
# Up to this many candidates a dense solve is as cheap as conjugate gradients and does not care how
# well connected the comparison graph is. Not beyond: LAPACK goes multi-threaded on bigger
# matrices, and on a busy worker its threads wait for cores (a 0.2 ms solve was seen taking 50 ms).
DENSE_MAX_N = 64
_POLISH = 1e-3


@dataclass(frozen=True, slots=True)
class LeaderboardRow:
    candidate_id: str
    generation: int
    score: float
    rank: int
    tie_group: int
    wins: int
    losses: int
    ties: int
    comparisons: int


def _sigmoid(d: FloatArray) -> FloatArray:
    # tanh form: no overflow for any finite d, exact 0.5 at 0.
    return 0.5 * (1.0 + np.tanh(0.5 * d))


def objective(s: FloatArray, a: IntArray, b: IntArray, y: FloatArray, lambda_: float) -> float:
    """The penalised negative log-likelihood at ``s``."""
    d = s[a] - s[b]
    return float(0.5 * lambda_ * (s @ s) + np.logaddexp(0.0, d).sum() - y @ d)


class _Problem:
    """Index arrays and scratch for one fit; every method is vectorised over the comparisons."""

    def __init__(self, n: int, a: IntArray, b: IntArray, y: FloatArray, lambda_: float) -> None:
        self.n, self.a, self.b, self.y, self.lambda_ = n, a, b, y, lambda_
        self._pairs: tuple[IntArray, IntArray, IntArray] | None = None
        self._hessian: FloatArray | None = None

    def gradient(self, s: FloatArray) -> tuple[FloatArray, FloatArray]:
        p = _sigmoid(s[self.a] - s[self.b])
        r = p - self.y
        g = self.lambda_ * s + np.bincount(self.a, r, self.n) - np.bincount(self.b, r, self.n)
        return g, p * (1.0 - p)

    def dense_step(self, g: FloatArray, w: FloatArray) -> FloatArray:
        n, a, b = self.n, self.a, self.b
        if self._pairs is None:
            # Off-diagonal entries per distinct unordered pair, scattered into one reused buffer:
            # a fresh n*n array per step costs more in page faults than the solve itself.
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            keys, inverse = np.unique(lo * n + hi, return_inverse=True)
            self._pairs = (inverse, keys, (keys % n) * n + keys // n)
            self._hessian = np.empty((n, n))
        inverse, upper, lower = self._pairs
        hessian = self._hessian
        assert hessian is not None
        pair_w = np.bincount(inverse, w, len(upper))
        hessian.fill(0.0)
        hessian.flat[upper] = -pair_w
        hessian.flat[lower] = -pair_w
        hessian.flat[:: n + 1] = self.lambda_ + np.bincount(a, w, n) + np.bincount(b, w, n)
        return np.asarray(np.linalg.solve(hessian, -g), dtype=np.float64)

    def cg_step(self, g: FloatArray, w: FloatArray, forcing: float) -> FloatArray:
        """Solve ``H x = -g`` by Jacobi-preconditioned CG to relative residual ``forcing``."""
        a, b, n, lam = self.a, self.b, self.n, self.lambda_
        diag = lam + np.bincount(a, w, n) + np.bincount(b, w, n)

        def hess_vec(v: FloatArray) -> FloatArray:
            t = w * (v[a] - v[b])
            return lam * v + np.bincount(a, t, n) - np.bincount(b, t, n)

        return jacobi_cg(hess_vec, -g, diag, forcing)


def jacobi_cg(
    hess_vec: Callable[[FloatArray], FloatArray],
    rhs: FloatArray,
    diag: NDArray[np.floating],
    forcing: float,
) -> FloatArray:
    """Solve ``H x = rhs`` by conjugate gradients preconditioned with ``diag`` (H's diagonal),
    to residual ``forcing * |rhs|``, at most ``10 * len(rhs)`` steps; ``hess_vec(v)`` is ``H v``."""
    x = np.zeros(len(rhs))
    r = rhs.copy()
    z = r / diag
    p = z.copy()
    rz = r @ z
    stop = forcing * np.sqrt(rhs @ rhs)
    for _ in range(10 * len(rhs)):
        hp = hess_vec(p)
        alpha = rz / (p @ hp)
        x += alpha * p
        r -= alpha * hp
        if np.sqrt(r @ r) <= stop:
            break
        z = r / diag
        rz_next = r @ z
        p = z + (rz_next / rz) * p
        rz = rz_next
    return x


def fit_arrays(
    n: int,
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    lambda_: float = 0.01,
    *,
    tol: float = 1e-7,
    max_iter: int = 500,
    method: Literal["auto", "dense", "cg"] = "auto",
) -> FloatArray:
    """The raw minimiser (not z-scored) for index arrays; ``s = 0`` with no outcomes."""
    if lambda_ <= 0:
        raise ValueError(f"lambda must be > 0 (got {lambda_})")
    s = np.zeros(n)
    if n == 0 or len(a) == 0:
        return s
    problem = _Problem(n, np.asarray(a, np.intp), np.asarray(b, np.intp), np.asarray(y), lambda_)
    dense = method == "dense" or (method == "auto" and n <= DENSE_MAX_N)
    f = objective(s, problem.a, problem.b, problem.y, lambda_)
    previous = np.inf
    for _ in range(max_iter):
        g, w = problem.gradient(s)
        gnorm = float(np.sqrt(g @ g))
        # |g| < tol alone can leave score errors near tol / lambda when a candidate has few
        # comparisons; Newton converges quadratically, so polish to tol * 1e-3 (usually one more
        # step) and stop early only once rounding stalls progress below tol.
        if not gnorm >= tol * _POLISH:  # also stops on NaN, which zscore() maps to 0
            break
        if gnorm < tol and gnorm > 0.5 * previous:
            break
        previous = gnorm
        if dense:
            step = problem.dense_step(g, w)
        else:
            step = problem.cg_step(g, w, forcing=min(0.1, np.sqrt(gnorm)))
        slope = float(g @ step)
        t = 1.0
        # Backtracking (Armijo). The rounding allowance lets the last, tiny Newton steps through
        # when the decrease is below what f can resolve.
        allowance = 1e-13 * (abs(f) + 1.0)
        while True:
            trial = s + t * step
            f_trial = objective(trial, problem.a, problem.b, problem.y, lambda_)
            if f_trial <= f + 1e-4 * t * slope + allowance or t < 1e-12:
                break
            t *= 0.5
        s, f = trial, f_trial
    return s


def hessian(s: FloatArray, a: IntArray, b: IntArray, lambda_: float) -> FloatArray:
    """The objective's Hessian at ``s``: ``lambda*I`` plus the comparisons' weighted Laplacian."""
    n = len(s)
    p = _sigmoid(s[a] - s[b])
    w = p * (1.0 - p)
    h = np.zeros((n, n))
    np.add.at(h, (a, b), -w)
    np.add.at(h, (b, a), -w)
    h.flat[:: n + 1] = lambda_ + np.bincount(a, w, n) + np.bincount(b, w, n)
    return h


def zscore(s: FloatArray) -> FloatArray:
    """Centre, divide by the population std when it exceeds 1e-6, map NaN and +-inf to 0."""
    s = np.where(np.isfinite(s), s, 0.0)
    if len(s) == 0:
        return s
    s = s - s.mean()
    std = float(s.std())
    if std > 1e-6:
        s = s / std
    return np.where(np.isfinite(s), s, 0.0)


def canonical_arrays(
    candidate_ids: Sequence[str], outcomes: Iterable[Outcome]
) -> tuple[list[str], IntArray, IntArray, FloatArray]:
    """Candidates sorted by id; outcomes as index arrays sorted by ``(a, b, y)``."""
    ids = sorted(candidate_ids)
    index = {cid: i for i, cid in enumerate(ids)}
    if len(index) != len(ids):
        raise ValueError("candidate ids must be unique")
    outcomes = list(outcomes)
    try:
        a = np.fromiter((index[o.presented_a] for o in outcomes), np.intp, len(outcomes))
        b = np.fromiter((index[o.presented_b] for o in outcomes), np.intp, len(outcomes))
    except KeyError as exc:
        raise ValueError(f"an outcome names unknown candidate {exc.args[0]!r}") from None
    y = np.fromiter((o.y for o in outcomes), np.float64, len(outcomes))
    if np.any(a == b):
        raise ValueError("an outcome compares a candidate with itself")
    # Index order is id order, so this is the order of (id a, id b, y): independent of the order
    # the comparisons completed in.
    order = np.lexsort((y, b, a))
    return ids, a[order], b[order], y[order]


def fit_scores(
    candidate_ids: Sequence[str],
    outcomes: Iterable[Outcome],
    *,
    lambda_: float = 0.01,
    tol: float = 1e-7,
    max_iter: int = 500,
) -> dict[str, float]:
    """Z-scored Bradley-Terry score per candidate id (all 0 without outcomes)."""
    ids, a, b, y = canonical_arrays(candidate_ids, outcomes)
    s = zscore(fit_arrays(len(ids), a, b, y, lambda_, tol=tol, max_iter=max_iter))
    return {cid: float(v) for cid, v in zip(ids, s, strict=True)}


def leaderboard(
    candidate_ids: Sequence[str],
    outcomes: Sequence[Outcome],
    *,
    lambda_: float = 0.01,
    generations: Mapping[str, int] | None = None,
    scores: Mapping[str, float] | None = None,
) -> list[LeaderboardRow]:
    """Rows sorted by score descending, then id; ``rank`` from 1, ``tie_group`` from 1.

    ``scores`` (by candidate id) are used instead of this module's fit: another fit of the same
    comparisons (``style_control``'s); the wins, losses and ties are counted here either way."""
    if scores is None:
        scores = fit_scores(candidate_ids, outcomes, lambda_=lambda_)
    tally = {cid: [0, 0, 0] for cid in scores}  # wins, losses, ties
    for o in outcomes:
        if o.winner == "tie":
            tally[o.presented_a][2] += 1
            tally[o.presented_b][2] += 1
        else:
            winner, loser = o.presented_a, o.presented_b
            if o.winner == "B":
                winner, loser = loser, winner
            tally[winner][0] += 1
            tally[loser][1] += 1
    order = sorted(scores, key=lambda cid: (-scores[cid], cid))
    rows: list[LeaderboardRow] = []
    group, previous = 0, None
    for position, cid in enumerate(order):
        score = scores[cid]
        if previous is None or abs(previous - score) > TIE_EPS:
            group += 1
        previous = score
        wins, losses, ties = tally[cid]
        rows.append(
            LeaderboardRow(
                candidate_id=cid,
                generation=(generations or {}).get(cid, 0),
                score=score,
                rank=position + 1,
                tie_group=group,
                wins=wins,
                losses=losses,
                ties=ties,
                comparisons=wins + losses + ties,
            )
        )
    return rows
