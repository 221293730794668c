"""Bradley-Terry with a length term and weighted comparisons, after the public arena's style
control.

The fit minimises

    0.5*lambda*|s|^2 + sum_k w_k * (softplus(z_k) - y_k*z_k),   z_k = s_a - s_b + gamma*x_k

over the scores ``s`` and the length coefficient ``gamma``; only ``s`` is penalised (as the
arena leaves its style coefficients free), so the scores are what remains once length has taken
what it explains. ``x_k`` is +1 when the candidate shown first is the longer, -1 when it is the
shorter, 0 for equal lengths: ``gamma`` is the log-odds the longer answer gains, the same
contrast ``judge.longer_win_rate`` counts.

Why the sign and not the arena's normalised difference ``(len_A - len_B) / (len_A + len_B)``:
the arena's models answer many prompts at many lengths, so length varies within a model and its
coefficient is identified by that. A tournament candidate has one length, so length is a
property of the candidate and its coefficient can only be told from quality through the shape
of the feature. On the sim (``benchmarks/ranking_trust.py``, a judge that picks the longer
answer with probability 0.3), the normalised difference made the recovered ranking worse than
no control at all (Kendall tau 0.32 against 0.67 uncontrolled, 264 comparisons over 12
candidates), a log-length difference (additive, so identified only by the penalty: the plain
scores less their linear trend in log length) recovered 29% of the tau lost, and the sign 53%.
Where length and identity cannot be told apart at all (two candidates), the penalty hands the
difference to length and the coefficient's interval is as wide as that deserves.

The log-odds term is what runs before ``tournament-2026-12h`` fit; ``model="mixture"`` fits the
judge's own model instead (``length_mixture``: with a share of its verdicts the longer wins
whatever the quality), a floor where this term is a shift. On the same sim with every pair
judged once it recovers 51% of the tau the bias costs against this term's 24% (74% against 57%
judged four times), and without a bias it ranks as the plain fit, where this term costs 0.02.

``w_k`` weighs each comparison (1 without weighting; ``confidence_weight``: a verdict the
judge was sure of counts up to three times, as Arena-Hard counts a strong preference three
times). The coefficient's 95% interval is Wald's, from the inverse Hessian of the objective at
the optimum (the arena bootstraps it; ``bootstrap.bootstrap`` holds it fixed, see there).

Damped Newton from ``s = 0, gamma = 0``: a dense solve of the ``n + 1`` system up to
``bradley_terry.DENSE_MAX_N`` candidates, conjugate gradients with Hessian-vector products
beyond. Pure (numpy, no Temporal import): it runs in the fit and bootstrap local activities.
Comparisons are put in the canonical order (``bradley_terry.canonical_arrays``) with their
weights and lengths, so the same comparisons give the same bits in any order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from workflows.tournament.bradley_terry import (
    DENSE_MAX_N,
    FloatArray,
    IntArray,
    Outcome,
    jacobi_cg,
    zscore,
)
from workflows.tournament.length_mixture import mixture_fit

__all__ = [
    "CONFIDENCE_WEIGHT_MAX",
    "LEVEL",
    "MIXTURE_MAX_N",
    "UNIDENTIFIED_SE",
    "UNIDENTIFIED_SHARE_SE",
    "Arrays",
    "ControlledFit",
    "LengthModel",
    "LengthTerm",
    "arrays",
    "confidence_weight",
    "controlled_fit",
    "fit",
    "length_feature",
    "objective",
]

LEVEL = 0.95
_Z = NormalDist().inv_cdf(0.5 + 0.5 * LEVEL)
CONFIDENCE_WEIGHT_MAX = 3.0
_TOL = 1e-7
MIXTURE_MAX_N = 100
"""The most candidates the mixture is fitted for: each of its ~200 grid cells is a dense Newton
fit with a determinant, cubic in the candidates (0.7 s of CPU for 100, 26 s for 400, minutes
for ``ponder rank``'s 1,000); past it the additive term ranks, as cheap as the plain fit, and
``LengthTerm.model`` says which."""
UNIDENTIFIED_SE = 5.0
"""A coefficient whose standard error passes this (a 95% interval wider than about +-10
log-odds, odds ratios past e^10) is read as not identified by the comparisons: where data pin
it down it is well under 1 (about 0.1 to 0.3 on the sim's runs); where only the penalty does it
is of order ``sqrt(2 / lambda)``, 14 at the default lambda."""
UNIDENTIFIED_SHARE_SE = 0.2
"""The mixture's share (``length_mixture``) is read as not identified past this standard
error: a flat posterior over its grid has 0.27, and 66 comparisons over 12 candidates about
0.1."""
_MAX_ITER = 500

LengthModel = Literal["additive", "mixture"]
"""The length term: ``gamma * x_k`` added to the log-odds (this module), or the judge's
mixture (``length_mixture``: with a fitted share of verdicts the longer wins whatever the
quality)."""


def confidence_weight(confidence: float | None) -> float:
    """A verdict's weight: ``1 + 2*confidence`` (1 for an unsure or silent judge, 3 for a sure
    one: Arena-Hard counts a strong preference as three wins and a weak one as one)."""
    if confidence is None or not 0.0 <= confidence <= 1.0:
        return 1.0
    return 1.0 + (CONFIDENCE_WEIGHT_MAX - 1.0) * confidence


def length_feature(len_a: FloatArray, len_b: FloatArray) -> FloatArray:
    """Per comparison: +1 when A is the longer, -1 when B is, 0 for equal lengths."""
    return np.sign(len_a - len_b).astype(np.float64)


def _sigmoid(z: FloatArray) -> FloatArray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def objective(
    s: FloatArray,
    gamma: float,
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    w: FloatArray,
    x: FloatArray,
    lambda_: float,
) -> float:
    """The penalised, weighted negative log-likelihood at ``(s, gamma)``."""
    z = s[a] - s[b] + gamma * x
    return float(0.5 * lambda_ * (s @ s) + w @ (np.logaddexp(0.0, z) - y * z))


def fit(
    n: int,
    a: IntArray,
    b: IntArray,
    y: FloatArray,
    *,
    weights: FloatArray | None = None,
    feature: FloatArray | None = None,
    lambda_: float = 0.01,
) -> tuple[FloatArray, float, float]:
    """The minimiser ``(s, gamma)`` (raw, not z-scored) and gamma's standard error (Wald; 0
    without a feature). Without ``feature`` gamma stays 0: a weighted Bradley-Terry fit."""
    if lambda_ <= 0:
        raise ValueError(f"lambda must be > 0 (got {lambda_})")
    m = len(a)
    w = np.ones(m) if weights is None else np.asarray(weights, np.float64)
    x = np.zeros(m) if feature is None else np.asarray(feature, np.float64)
    free = feature is not None and bool(np.any(x != 0.0))
    size = n + 1 if free else n
    theta = np.zeros(size)
    if n == 0 or m == 0:
        return np.zeros(n), 0.0, 0.0

    def split(t: FloatArray) -> tuple[FloatArray, float]:
        return t[:n], float(t[n]) if free else 0.0

    def value(t: FloatArray) -> float:
        s, g = split(t)
        return objective(s, g, a, b, y, w, x, lambda_)

    def derivatives(t: FloatArray) -> tuple[FloatArray, FloatArray]:
        s, g = split(t)
        p = _sigmoid(s[a] - s[b] + g * x)
        r = w * (p - y)
        grad = lambda_ * s + np.bincount(a, r, n) - np.bincount(b, r, n)
        if free:
            grad = np.append(grad, r @ x)
        return grad, w * p * (1.0 - p)

    def dense_hessian(c: FloatArray) -> FloatArray:
        h = np.zeros((size, size))
        np.add.at(h, (a, b), -c)
        np.add.at(h, (b, a), -c)
        h.flat[: n * size : size + 1] = lambda_ + np.bincount(a, c, n) + np.bincount(b, c, n)
        if free:
            cross = np.bincount(a, c * x, n) - np.bincount(b, c * x, n)
            h[:n, n] = h[n, :n] = cross
            h[n, n] = c @ (x * x)
        return h

    def cg_solve(c: FloatArray, rhs: FloatArray, forcing: float) -> FloatArray:
        diag = np.append(lambda_ + np.bincount(a, c, n) + np.bincount(b, c, n), c @ (x * x))
        diag = diag[:size]

        def hess_vec(v: FloatArray) -> FloatArray:
            s, g = split(v)
            t = c * (s[a] - s[b] + g * x)
            out = lambda_ * s + np.bincount(a, t, n) - np.bincount(b, t, n)
            return np.append(out, t @ x) if free else out

        return jacobi_cg(hess_vec, rhs, diag, forcing)

    dense = n <= DENSE_MAX_N
    f = value(theta)
    previous = np.inf
    for _ in range(_MAX_ITER):
        g, c = derivatives(theta)
        gnorm = float(np.sqrt(g @ g))
        # Polish past tol (Newton's last steps are quadratic) unless rounding stalls progress.
        if not gnorm >= _TOL * 1e-3 or (gnorm < _TOL and gnorm > 0.5 * previous):
            break
        previous = gnorm
        if dense:
            step = np.linalg.solve(dense_hessian(c), -g)
        else:
            step = cg_solve(c, -g, forcing=min(0.1, float(np.sqrt(gnorm))))
        slope = float(g @ step)
        t = 1.0
        allowance = 1e-13 * (abs(f) + 1.0)
        while True:
            trial = theta + t * step
            f_trial = value(trial)
            if f_trial <= f + 1e-4 * t * slope + allowance or t < 1e-12:
                break
            t *= 0.5
        theta, f = trial, f_trial
    s, gamma = split(theta)
    se = 0.0
    if free:
        _, c = derivatives(theta)
        unit = np.zeros(size)
        unit[n] = 1.0
        if dense:
            column = np.linalg.solve(dense_hessian(c), unit)
        else:
            column = cg_solve(c, unit, forcing=1e-10)
        se = float(np.sqrt(max(column[n], 0.0)))
    return s, gamma, se


@dataclass(frozen=True, slots=True)
class Arrays:
    """Comparisons in canonical order: index arrays, outcomes, weights, the length feature."""

    ids: list[str]
    a: IntArray
    b: IntArray
    y: FloatArray
    weights: FloatArray | None
    feature: FloatArray | None


def arrays(
    candidate_ids: Sequence[str],
    outcomes: Sequence[Outcome],
    *,
    weights: Sequence[float] | None = None,
    lengths: Mapping[str, int] | None = None,
) -> Arrays:
    """The fit's arrays, in the order ``bradley_terry.canonical_arrays`` gives, with weights
    (``weights[k]`` goes with ``outcomes[k]``) and lengths (by candidate id) in step."""
    ids = sorted(candidate_ids)
    index = {cid: i for i, cid in enumerate(ids)}
    if len(index) != len(ids):
        raise ValueError("candidate ids must be unique")
    m = len(outcomes)
    try:
        a = np.fromiter((index[o.presented_a] for o in outcomes), np.intp, m)
        b = np.fromiter((index[o.presented_b] for o in outcomes), np.intp, m)
    except KeyError as exc:
        raise ValueError(f"an outcome names unknown candidate {exc.args[0]!r}") from None
    if np.any(a == b):
        raise ValueError("an outcome compares a candidate with itself")
    # The count only sizes the array ahead: without it the same array comes out.
    y = np.fromiter((o.y for o in outcomes), np.float64, m)  # pragma: no mutate
    w = None if weights is None else np.asarray(weights, np.float64)
    if w is not None and (len(w) != m or not np.all(np.isfinite(w)) or np.any(w <= 0)):
        raise ValueError("weights must be positive numbers, one per outcome")
    # Weights break ties in the order, so equal outcomes with different weights (which the fit
    # treats alike, summed) still come out in one order whatever order they arrived in.
    keys = (y, b, a) if w is None else (w, y, b, a)
    order = np.lexsort(keys)
    a, b, y = a[order], b[order], y[order]
    w = None if w is None else w[order]
    feature = None
    if lengths is not None:
        size = np.array([float(lengths.get(cid, 0)) for cid in ids])
        feature = length_feature(size[a], size[b])
    return Arrays(ids, a, b, y, w, feature)


@dataclass(frozen=True, slots=True)
class LengthTerm:
    """The fitted length coefficient: the log-odds the longer candidate gains (``additive``),
    or the share of verdicts between different lengths the longer won whatever the quality
    (``mixture``)."""

    coefficient: float
    low: float
    high: float
    standard_error: float
    comparisons: int
    differing: int
    """Comparisons between candidates of different lengths (the only ones that inform it)."""
    model: LengthModel = "additive"

    @property
    def identified(self) -> bool:
        """Whether the comparisons tell length from the candidates' own strength: not when
        only the penalty does (two candidates, or lengths that follow the ranking exactly,
        where the unpenalised coefficient runs off towards infinity; for the mixture, a
        share the comparisons leave nearly as uncertain as its flat prior)."""
        limit = UNIDENTIFIED_SHARE_SE if self.model == "mixture" else UNIDENTIFIED_SE
        return self.differing > 0 and self.standard_error <= limit

    @property
    def significant(self) -> bool:
        return self.identified and (self.low > 0 or self.high < 0)


@dataclass(frozen=True, slots=True)
class ControlledFit:
    ids: list[str]
    raw: FloatArray
    """The minimiser's scores, in ``ids`` order (not z-scored)."""
    scores: dict[str, float]
    """Z-scored, as the leaderboard shows them."""
    offset: FloatArray | None
    """``gamma * x_k`` per comparison in canonical order (None without an additive length
    term)."""
    length: LengthTerm | None
    centre: FloatArray | None = None
    weights: FloatArray | None = None
    targets: FloatArray | None = None
    """The mixture's weighted Bradley-Terry objective at its share (``length_mixture``): its
    minimiser, weights and outcomes in canonical order, what the intervals' refits take."""


def controlled_fit(
    candidate_ids: Sequence[str],
    outcomes: Sequence[Outcome],
    *,
    weights: Sequence[float] | None = None,
    lengths: Mapping[str, int] | None = None,
    lambda_: float = 0.01,
    # Only "mixture" is told apart: any other default is the additive term.
    model: LengthModel = "additive",  # pragma: no mutate
) -> ControlledFit:
    """Scores with the length term (``lengths`` given) and/or weights (``weights`` given);
    ``model`` says which length term (the mixture up to ``MIXTURE_MAX_N`` candidates)."""
    arr = arrays(candidate_ids, outcomes, weights=weights, lengths=lengths)
    if arr.feature is not None and model == "mixture" and len(arr.ids) <= MIXTURE_MAX_N:
        return _mixture(arr, lambda_)
    s, gamma, se = fit(
        len(arr.ids),
        arr.a,
        arr.b,
        arr.y,
        weights=arr.weights,
        feature=arr.feature,
        lambda_=lambda_,
    )
    z = zscore(s)
    length = None
    offset = None
    if arr.feature is not None:
        offset = gamma * arr.feature
        length = LengthTerm(
            coefficient=gamma,
            low=gamma - _Z * se,
            high=gamma + _Z * se,
            standard_error=se,
            comparisons=len(arr.a),
            differing=int(np.count_nonzero(arr.feature)),
        )
    return ControlledFit(
        ids=arr.ids,
        raw=s,
        # One score per id: zipped strictly or not, the same pairs.
        scores={cid: float(v) for cid, v in zip(arr.ids, z, strict=True)},  # pragma: no mutate
        offset=offset,
        length=length,
    )


def _mixture(arr: Arrays, lambda_: float) -> ControlledFit:
    assert arr.feature is not None
    mix = mixture_fit(
        len(arr.ids), arr.a, arr.b, arr.y, arr.feature, weights=arr.weights, lambda_=lambda_
    )
    z = zscore(mix.scores)
    return ControlledFit(
        ids=arr.ids,
        raw=mix.scores,
        # One score per id: zipped strictly or not, the same pairs.
        scores={cid: float(v) for cid, v in zip(arr.ids, z, strict=True)},  # pragma: no mutate
        offset=None,
        length=LengthTerm(
            coefficient=mix.share,
            low=mix.low,
            high=mix.high,
            standard_error=mix.standard_error,
            comparisons=len(arr.a),
            differing=int(np.count_nonzero(arr.feature)),
            model="mixture",
        ),
        centre=mix.centre,
        weights=mix.weights,
        targets=mix.targets,
    )
