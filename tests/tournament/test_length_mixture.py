"""The mixture length term (``length_mixture``), each part against an independent
computation: scipy on the likelihood written out here, the plain Bradley-Terry fit, the Fisher
information by enumerating outcomes, and a simulated judge whose share is known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from workflows.tournament.bradley_terry import fit_arrays
from workflows.tournament.length_mixture import SHARE_MAX, SHARE_STEP, fit_at_share, mixture_fit
from workflows.tournament.style_control import fit as weighted_fit


def _case(seed: int, n: int = 6, m: int = 70, ties: bool = True):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    y = rng.choice([0.0, 1.0, 0.5], m, p=[0.45, 0.45, 0.1] if ties else [0.5, 0.5, 0.0])
    lengths = rng.integers(100, 400, n)
    lengths[1] = lengths[0]  # one pair of equal lengths: plain Bradley-Terry there
    x = np.sign(lengths[a] - lengths[b]).astype(float)
    w = rng.uniform(1.0, 3.0, m)
    return a, b, y, x, w


def _chance(s, a, b, x, share):
    """P(A wins), written out: with chance ``share`` the longer wins, else Bradley-Terry."""
    bt = 1.0 / (1.0 + np.exp(-(s[a] - s[b])))
    eps = np.where(x != 0, share, 0.0)
    return eps * (x > 0) + (1.0 - eps) * bt


def _written_out(s, a, b, y, x, w, share, lam):
    p = _chance(np.asarray(s, np.longdouble), a, b, x, share)
    return float(0.5 * lam * (s @ s) - w @ (y * np.log(p) + (1 - y) * np.log1p(-p)))


@pytest.mark.parametrize(("seed", "share"), [(0, 0.0), (1, 0.3), (2, 0.7), (3, 0.95)])
def test_the_fit_at_a_share_matches_scipy_on_the_written_out_likelihood(
    seed: int, share: float
) -> None:
    n, lam = 6, 0.05
    a, b, y, x, w = _case(seed, n)
    s, value, _ = fit_at_share(n, a, b, y, x, share, weights=w, lambda_=lam)
    reference = minimize(
        _written_out, np.zeros(n), args=(a, b, y, x, w, share, lam), method="BFGS",
        options={"gtol": 1e-10},
    )  # fmt: skip
    assert np.abs(s - reference.x).max() < 1e-4
    assert value == pytest.approx(reference.fun, abs=1e-8)
    assert value <= reference.fun + 1e-9


def test_at_share_zero_it_is_the_plain_fit() -> None:
    n, lam = 6, 0.01
    a, b, y, x, _ = _case(4, n)
    s, _, _ = fit_at_share(n, a, b, y, x, 0.0, lambda_=lam)
    assert np.abs(s - fit_arrays(n, a, b, y, lam)).max() < 1e-7


def _expected_information(s, a, b, x, w, share, lam, n):
    """The Fisher information by its definition: over both outcomes of each comparison, the
    chance of the outcome times the outer product of its log-likelihood's gradient (finite
    differences in ``s_a - s_b``)."""
    h = lam * np.eye(n)
    step = 1e-6
    for k in range(len(a)):
        e = np.zeros(n)
        e[a[k]], e[b[k]] = 1.0, -1.0
        p = float(_chance(s, a[k : k + 1], b[k : k + 1], x[k : k + 1], share)[0])
        up = float(_chance(s + step * e / 2, a[k : k + 1], b[k : k + 1], x[k : k + 1], share)[0])
        down = float(_chance(s - step * e / 2, a[k : k + 1], b[k : k + 1], x[k : k + 1], share)[0])
        dp = (up - down) / step / 2  # d p / d(s_a - s_b): e moves the difference by 2
        info = p * (dp / p) ** 2 + (1 - p) * (dp / (1 - p)) ** 2
        h += w[k] * info * np.outer(e, e)
    return h


def test_the_share_is_the_mean_of_the_laplace_marginal_likelihood() -> None:
    n, lam = 6, 0.2
    a, b, y, x, w = _case(5, n, 90, ties=False)
    fitted = mixture_fit(n, a, b, y, x, weights=w, lambda_=lam, prior_precisions=(lam,))
    grid = np.arange(0.0, SHARE_MAX + SHARE_STEP / 2, SHARE_STEP)
    curve = []
    for share in grid:
        ref = minimize(
            _written_out, np.zeros(n), args=(a, b, y, x, w, share, lam), method="BFGS",
            options={"gtol": 1e-10},
        )  # fmt: skip
        h = _expected_information(ref.x, a, b, x, w, share, lam, n)
        curve.append(-ref.fun - 0.5 * np.linalg.slogdet(h)[1])
    posterior = np.exp(np.array(curve) - max(curve))
    posterior /= posterior.sum()
    mean = posterior @ grid
    assert fitted.share == pytest.approx(mean, abs=1e-5)
    assert fitted.standard_error == pytest.approx(math.sqrt(posterior @ (grid - mean) ** 2), 1e-4)
    cdf = np.cumsum(posterior)
    assert fitted.low == grid[np.searchsorted(cdf, 0.025)]
    assert fitted.high == grid[np.searchsorted(cdf, 0.975)]


def test_the_weighted_objective_the_intervals_refit_has_the_centre_as_minimiser() -> None:
    n, lam = 6, 0.01
    a, b, y, x, w = _case(6, n)
    fitted = mixture_fit(n, a, b, y, x, weights=w, lambda_=lam)
    s, _, _ = weighted_fit(n, a, b, fitted.targets, weights=fitted.weights, lambda_=lam)
    assert np.abs(s - fitted.centre).max() < 1e-5
    reference = minimize(
        _written_out, np.zeros(n), args=(a, b, y, x, w, fitted.share, lam), method="BFGS",
        options={"gtol": 1e-10},
    ).x  # fmt: skip
    assert np.abs(s - reference).max() < 1e-4
    # Where the longer lost, or the lengths are equal, a verdict counts whole.
    longer_lost = ((x > 0) & (y == 0)) | ((x < 0) & (y == 1)) | (x == 0)
    assert np.allclose(fitted.weights[longer_lost], w[longer_lost])
    assert np.all(fitted.weights <= w + 1e-12)


def _simulated(share: float, repeats: int, seed: int, n: int = 10):
    rng = np.random.default_rng(seed)
    quality = rng.normal(0.0, 1.5, n)
    lengths = rng.permutation(n) * 50 + 100
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)] * repeats
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    x = np.sign(lengths[a] - lengths[b]).astype(float)
    p = _chance(quality, a, b, x, share)
    return a, b, (rng.random(len(a)) < p).astype(float), x


@pytest.mark.parametrize("share", [0.0, 0.3, 0.6])
def test_the_share_of_a_simulated_judge_is_found_without_the_joint_fits_bias(
    share: float,
) -> None:
    found, joint = [], []
    for seed in range(6):
        a, b, y, x = _simulated(share, 12, seed=seed)
        fitted = mixture_fit(10, a, b, y, x, lambda_=0.01)
        found.append(fitted.share)
        assert fitted.low <= fitted.share <= fitted.high + 1e-12
        assert fitted.high - fitted.low < 0.3
        # The joint maximum over scores and share, at the same ridge, for contrast.
        grid = np.arange(0.0, SHARE_MAX + SHARE_STEP / 2, SHARE_STEP)
        values = [fit_at_share(10, a, b, y, x, float(g), lambda_=0.01)[1] for g in grid]
        joint.append(grid[int(np.argmin(values))])
    assert abs(np.mean(found) - share) < 0.04
    if share:
        assert np.mean(joint) < np.mean(found)
    else:
        assert max(found) <= 0.1


def test_the_scores_are_the_posterior_mean_over_shares_and_precisions() -> None:
    n, lam = 6, 0.01
    a, b, y, x, w = _case(7, n, 60, ties=False)
    precisions = (0.1, 1.0)
    fitted = mixture_fit(n, a, b, y, x, weights=w, lambda_=lam, prior_precisions=precisions)
    grid = np.arange(0.0, SHARE_MAX + SHARE_STEP / 2, SHARE_STEP)
    logs, points = [], []
    for precision in precisions:
        for share in grid:
            ref = minimize(
                _written_out, np.zeros(n), args=(a, b, y, x, w, share, precision),
                method="BFGS", options={"gtol": 1e-10},
            )  # fmt: skip
            h = _expected_information(ref.x, a, b, x, w, share, precision, n)
            logs.append(0.5 * n * math.log(precision) - ref.fun - 0.5 * np.linalg.slogdet(h)[1])
            points.append(ref.x)
    weight = np.exp(np.array(logs) - max(logs))
    weight /= weight.sum()
    assert np.abs(fitted.scores - weight @ np.array(points)).max() < 1e-4
    shares = np.tile(grid, len(precisions))
    assert fitted.share == pytest.approx(weight @ shares, abs=1e-5)


def test_without_different_lengths_it_is_the_plain_fit_with_no_share() -> None:
    n, lam = 6, 0.01
    a, b, y, _, w = _case(8, n)
    fitted = mixture_fit(n, a, b, y, np.zeros(len(a)), weights=w, lambda_=lam)
    expected, _, _ = weighted_fit(n, a, b, y, weights=w, lambda_=lam)
    assert np.abs(fitted.scores - expected).max() < 1e-6
    assert (fitted.share, fitted.low, fitted.high, fitted.standard_error) == (0, 0, 0, 0)
    assert np.array_equal(fitted.weights, w) and np.array_equal(fitted.targets, y)
    empty = mixture_fit(3, a[:0], b[:0], y[:0], np.zeros(0), lambda_=lam)
    assert empty.scores.tolist() == [0.0, 0.0, 0.0] and empty.share == 0.0
