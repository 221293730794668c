"""Length control as the length-biased judge's own model: a mixture, its share fitted by
marginal likelihood.

Between candidates of different lengths the judge is taken to pick the longer with chance
``share`` whatever their quality, and otherwise to judge as Bradley-Terry:

    P(the longer wins) = share + (1 - share) * sigmoid(s_longer - s_shorter)

(equal lengths: plain Bradley-Terry). Against the additive log-odds term (``style_control``)
this is a floor, not a shift: a verdict the shorter candidate won is whole evidence about
quality, one the longer won is partly length's, however far apart the two are.

The share is not the joint maximum of the scores and the share: with one verdict a pair the
scores are nearly as many as the comparisons each one has, and they take up part of what length
did (a long candidate's wins go to its score), so the joint maximum puts the share low (0.22 on
average where the judge picked the longer 30% of the time). Here the share and the scores are
averaged over their posterior: a flat prior on a grid of shares from 0 to ``SHARE_MAX``, a
Gaussian prior on the scores whose precision is one of ``PRIOR_PRECISIONS`` (equally likely a
priori), and each cell of that grid weighed by its marginal likelihood, the scores integrated
out by Laplace's approximation (with the Fisher information). Integrating the scores out charges
the share for the scores' freedom, as restricted maximum likelihood does a variance, and the
posterior mean of the share comes out near the truth (0.32 for 0.3 on the sim); averaging the
scores, rather than taking them at one share, carries the share's uncertainty into the ranking.

At a given share the penalised maximum is the minimiser of a weighted Bradley-Terry objective:
a verdict the longer won counts with its chance of having been a quality verdict
(``responsibility``), every other verdict counts whole. ``MixtureFit.weights`` and ``targets``
are that objective's weights and outcomes at the posterior-mean share and the run's ridge (a
tie is half a win and half a loss, each with its own chance), so the intervals' refits
(``bootstrap``, ``likelihood_intervals``) take them as they take confidence weights, holding
the share at its full-data value as they hold the additive coefficient.

Pure (numpy, no Temporal import): it runs in the fit and bootstrap local activities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workflows.tournament.bradley_terry import FloatArray, IntArray

__all__ = [
    "PRIOR_PRECISIONS",
    "SHARE_MAX",
    "SHARE_STEP",
    "MixtureFit",
    "fit_at_share",
    "mixture_fit",
    "mixture_objective",
]

SHARE_STEP = 0.025
SHARE_MAX = 0.95
"""The grid's last share: a judge that picks the longer every time leaves nothing to rank."""
PRIOR_PRECISIONS = (0.01, 0.03, 0.1, 0.3, 1.0)
"""The Gaussian prior's precisions on the scores the posterior ranges over (a run's ridge guards
against runaway scores and is no prior: 0.01 by default, a spread of 10 where judged scores
spread about 1 to 3, and a prior that vague makes the marginal likelihood favour large shares)."""
_TOL = 1e-9
_MAX_ITER = 200


def _softplus(z: FloatArray) -> FloatArray:
    return np.logaddexp(0.0, z)


def _sigmoid(z: FloatArray) -> FloatArray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@dataclass(frozen=True, slots=True)
class _Oriented:
    """Each comparison seen from its longer candidate (from A where the lengths are equal):
    ``sign`` +1 where that is A, -1 where B; ``y`` the longer's outcome; ``differs`` where the
    lengths differ."""

    sign: FloatArray
    y: FloatArray
    differs: FloatArray


def _orient(y: FloatArray, feature: FloatArray) -> _Oriented:
    sign = np.where(feature < 0, -1.0, 1.0)
    return _Oriented(sign, np.where(sign > 0, y, 1.0 - y), (feature != 0).astype(np.float64))


def _log_chances(t: FloatArray, eps: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``log(1 - eps)`` and the log of the longer's chance, ``eps + (1 - eps) * sigmoid(t)``."""
    with np.errstate(divide="ignore"):
        log_keep = np.log1p(-eps)
        return log_keep, np.logaddexp(np.log(eps), log_keep - _softplus(-t))


def _responsibility(
    s: FloatArray, a: IntArray, b: IntArray, o: _Oriented, share: float
) -> FloatArray:
    """The chance a win of the longer's was the quality part's (1 where lengths are equal)."""
    t = o.sign * (s[a] - s[b])
    log_keep, log_p = _log_chances(t, share * o.differs)
    return np.asarray(np.exp(log_keep - _softplus(-t) - log_p))


def _terms(
    s: FloatArray, a: IntArray, b: IntArray, o: _Oriented, share: float
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Per comparison: the negative log-likelihood, its first and second derivatives in
    ``s_a - s_b`` and the Fisher information of ``s_a - s_b``."""
    t = o.sign * (s[a] - s[b])
    log_keep, log_p = _log_chances(t, share * o.differs)
    nll = -(o.y * log_p + (1.0 - o.y) * (log_keep - _softplus(t)))
    rho = np.exp(log_keep - _softplus(-t) - log_p)
    sig, sig_neg = _sigmoid(t), _sigmoid(-t)
    slope = o.sign * ((1.0 - o.y) * sig - o.y * rho * sig_neg)
    # A win of the longer's can bend the wrong way where length explains it (rho small).
    curve = (1.0 - o.y) * sig * sig_neg + o.y * rho * sig_neg * (sig - (1.0 - rho) * sig_neg)
    return nll, slope, curve, rho * sig * sig_neg


def mixture_objective(
    s: FloatArray,
    share: float,
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    feature: FloatArray,
    *,
    weights: FloatArray | None = None,
    lambda_: float,
) -> float:
    """The penalised, weighted negative log-likelihood of the mixture at ``(s, share)``;
    ``feature`` as ``style_control.length_feature`` (+1 where A is the longer)."""
    nll, _, _, _ = _terms(s, a, b, _orient(y, feature), share)
    w = np.ones(len(a)) if weights is None else weights
    return float(0.5 * lambda_ * (s @ s) + w @ nll)


def _matrix(n: int, cells: IntArray, c: FloatArray, lambda_: float) -> FloatArray:
    """``lambda*I + sum_k c_k (e_a - e_b)(e_a - e_b)^T``; ``cells``: ``_cells(n, a, b)``."""
    h = np.bincount(cells, np.concatenate((c, c, -c, -c)), n * n).astype(np.float64)
    h[:: n + 1] += lambda_
    return h.reshape(n, n)


def _cells(n: int, a: IntArray, b: IntArray) -> IntArray:
    return np.concatenate((a * (n + 1), b * (n + 1), a * n + b, b * n + a))


def fit_at_share(
    n: int,
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    feature: FloatArray,
    share: float,
    *,
    weights: FloatArray | None = None,
    lambda_: float,
    start: FloatArray | None = None,
) -> tuple[FloatArray, float, FloatArray]:
    """The minimiser of ``mixture_objective`` at ``share`` (Newton, with the Fisher information
    where the Hessian is not positive definite, and a backtracking line search), the objective
    there and its Fisher information matrix (with the ridge)."""
    o = _orient(y, feature)
    w = np.ones(len(a)) if weights is None else weights
    s = np.zeros(n) if start is None else start.copy()
    cells = _cells(n, a, b)

    def value(v: FloatArray) -> tuple[float, FloatArray, FloatArray, FloatArray]:
        nll, slope, curve, info = _terms(v, a, b, o, share)
        return float(0.5 * lambda_ * (v @ v) + w @ nll), w * slope, w * curve, w * info

    f, r, k, c = value(s)
    for _ in range(_MAX_ITER):
        grad = lambda_ * s + np.bincount(a, r, n) - np.bincount(b, r, n)
        if float(np.max(np.abs(grad), initial=0.0)) < _TOL:
            break
        try:
            factor = np.linalg.cholesky(_matrix(n, cells, k, lambda_))
            step = -np.linalg.solve(factor.T, np.linalg.solve(factor, grad))
        except np.linalg.LinAlgError:
            step = np.linalg.solve(_matrix(n, cells, c, lambda_), -grad)
        slope = float(grad @ step)
        t = 1.0
        while True:
            trial = s + t * step
            f_trial, r_trial, k_trial, c_trial = value(trial)
            if f_trial <= f + 1e-4 * t * slope + 1e-13 * (abs(f) + 1.0) or t < 1e-10:
                break
            t *= 0.5
        s, f, r, k, c = trial, f_trial, r_trial, k_trial, c_trial
    return s, f, _matrix(n, cells, c, lambda_)


@dataclass(frozen=True, slots=True)
class MixtureFit:
    scores: FloatArray
    """The scores' posterior mean (raw, not z-scored): over the grid of shares and prior
    precisions, each cell's penalised maximum weighed by its marginal likelihood."""
    share: float
    """The share's posterior mean (a flat prior on the grid)."""
    low: float
    high: float
    """The share's 95% interval: the posterior's central 95% over the grid."""
    standard_error: float
    """The share's posterior standard deviation."""
    centre: FloatArray
    """The penalised maximum (the run's ridge) at ``share``: the minimiser of the weighted
    objective below, where the intervals' refits are centred."""
    weights: FloatArray
    """The weighted Bradley-Terry objective's weights at ``share`` (see the module docstring)."""
    targets: FloatArray
    """And its outcomes (A's), in the same order."""


def mixture_fit(
    n: int,
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    feature: FloatArray,
    *,
    weights: FloatArray | None = None,
    lambda_: float,
    prior_precisions: Sequence[float] = PRIOR_PRECISIONS,
) -> MixtureFit:
    """The mixture's fit (module docstring): the scores and the share averaged over their
    posterior, and the weighted objective at that share with the run's ridge ``lambda_``."""
    w = np.ones(len(a)) if weights is None else np.asarray(weights, np.float64)
    if not np.any(feature != 0):
        # No comparison between different lengths: nothing to tell a share from, and the
        # leaderboard is the plain (weighted) fit.
        plain, _, _ = fit_at_share(n, a, b, y, feature, 0.0, weights=w, lambda_=lambda_)
        return MixtureFit(plain, 0.0, 0.0, 0.0, 0.0, plain, w, np.asarray(y, np.float64))
    grid = np.round(np.arange(0.0, SHARE_MAX + SHARE_STEP / 2, SHARE_STEP), 10)
    curves = np.empty((len(prior_precisions), len(grid)))
    cells = np.empty((len(prior_precisions), len(grid), n))
    for j, precision in enumerate(prior_precisions):
        start = None
        for i, share in enumerate(grid):
            start, f, h = fit_at_share(
                n, a, b, y, feature, float(share), weights=w, lambda_=precision, start=start
            )
            cells[j, i] = start
            # The prior's normalising constant, 0.5 * n * log(precision), is what lets
            # precisions be compared.
            curves[j, i] = 0.5 * n * np.log(precision) - f - 0.5 * np.linalg.slogdet(h)[1]
    posterior = np.exp(curves - curves.max())
    posterior /= posterior.sum()
    scores = np.einsum("ji,jik->k", posterior, cells)
    marginal = posterior.sum(axis=0)
    share = float(marginal @ grid)
    cdf = np.cumsum(marginal)
    low = float(grid[min(int(np.searchsorted(cdf, 0.025)), len(grid) - 1)])
    high = float(grid[min(int(np.searchsorted(cdf, 0.975)), len(grid) - 1)])
    se = float(np.sqrt(max(marginal @ (grid - share) ** 2, 0.0)))
    centre, _, _ = fit_at_share(n, a, b, y, feature, share, weights=w, lambda_=lambda_)
    o = _orient(y, feature)
    rho = _responsibility(centre, a, b, o, share)
    # The longer's outcome split into its win (counted with rho) and its loss (whole).
    keep = o.y * rho + (1.0 - o.y)
    won = np.divide(o.y * rho, keep, out=np.zeros_like(keep), where=keep > 0)
    targets = np.where(o.sign > 0, won, 1.0 - won)
    return MixtureFit(scores, share, low, high, se, centre, w * keep, targets)
