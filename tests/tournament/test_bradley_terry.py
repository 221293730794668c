"""Bradley-Terry fit and leaderboard, checked against scipy L-BFGS-B on the same objective."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.optimize import minimize

from workflows.tournament.bradley_terry import (
    DENSE_MAX_N,
    LeaderboardRow,
    Outcome,
    _Problem,
    fit_arrays,
    fit_scores,
    hessian,
    leaderboard,
    zscore,
)
from workflows.tournament.judge_parse import Winner


def random_outcome(rng: random.Random, ids: list[str]) -> Outcome:
    a, b = rng.sample(ids, 2)
    winner: Winner = rng.choice(["A", "B", "tie"])
    return Outcome(a, b, winner)


def scipy_reference(n: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Independent fit: L-BFGS-B, analytic gradient, the spec's tolerances, then z-scored.

    One run from 0 with float64 stops on ``ftol`` once a step gains less than 1e-15 * |f| (f is
    ~1e3 here), which leaves gradients near 1e-6 and score errors of a few 1e-6: not a reference
    for a 1e-6 comparison. So, with the same options, it is restarted from its own answer on the
    objective shifted by the value it reached and summed in extended precision (same minimiser;
    the stopping test then looks at the remaining decrease, not at |f|).
    """
    y_ld = y.astype(np.longdouble)

    def f_and_grad(s: np.ndarray, shift: np.longdouble) -> tuple[float, np.ndarray]:
        s_ld = s.astype(np.longdouble)
        d = s_ld[a] - s_ld[b]
        f = 0.5 * lam * (s_ld @ s_ld) + np.logaddexp(0, d).sum() - y_ld @ d
        r = (0.5 * (1 + np.tanh(0.5 * d)) - y_ld).astype(np.float64)
        grad = lam * s + np.bincount(a, r, n) - np.bincount(b, r, n)
        return float(f - shift), grad

    options = {"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000, "maxfun": 100000}
    s, shift = np.zeros(n), np.longdouble(0)
    for _ in range(3):
        result = minimize(
            f_and_grad, s, args=(shift,), jac=True, method="L-BFGS-B", options=options
        )
        s, shift = result.x, shift + np.longdouble(result.fun)
    return zscore(s)


def random_case(rng: np.random.Generator) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    n = int(rng.integers(2, 201))
    m = int(rng.integers(n, 20 * n + 1))
    strength = rng.normal(size=n) * float(rng.choice([0.3, 1.0, 2.0, 4.0]))
    a = rng.integers(0, n, m)
    b = rng.integers(0, n - 1, m)
    b = np.where(b >= a, b + 1, b)
    y = (rng.random(m) < 1 / (1 + np.exp(strength[b] - strength[a]))).astype(np.float64)
    y[rng.random(m) < 0.05] = 0.5
    return n, a, b, y


@pytest.mark.parametrize("case", range(24))
def test_matches_scipy_to_1e6(case: int) -> None:
    n, a, b, y = random_case(np.random.default_rng(1000 + case))
    ours = zscore(fit_arrays(n, a, b, y, 0.01))
    assert np.max(np.abs(ours - scipy_reference(n, a, b, y, 0.01))) < 1e-6


@pytest.mark.parametrize("lam", [0.001, 0.1, 1.0])
def test_matches_scipy_for_other_lambdas(lam: float) -> None:
    n, a, b, y = random_case(np.random.default_rng(7))
    ours = zscore(fit_arrays(n, a, b, y, lam))
    assert np.max(np.abs(ours - scipy_reference(n, a, b, y, lam))) < 1e-6


@pytest.mark.parametrize("n", [5, 60, 150])
def test_dense_and_conjugate_gradient_agree(n: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.integers(0, n, 10 * n)
    b = (a + rng.integers(1, n, 10 * n)) % n
    y = rng.integers(0, 2, 10 * n).astype(np.float64)
    dense = fit_arrays(n, a, b, y, method="dense")
    cg = fit_arrays(n, a, b, y, method="cg")
    assert np.max(np.abs(dense - cg)) < 1e-8
    for s in (dense, cg):
        gradient, _ = _Problem(n, a, b, y, 0.01).gradient(s)
        assert np.linalg.norm(gradient) < 1e-7


def test_a_sparse_ring_converges() -> None:
    # A 2-regular ring is the worst-connected schedule the tournament uses.
    n = 120
    a = np.arange(n)
    b = (a + 1) % n
    y = np.ones(n)
    y[-1] = 0.0  # i beats i+1 all the way round, and 0 beats n-1: a strict order 0 > 1 > ...
    s = fit_arrays(n, a, b, y, method="cg")
    assert np.linalg.norm(_Problem(n, a, b, y, 0.01).gradient(s)[0]) < 1e-7
    assert np.all(np.diff(s) < 0)
    assert np.max(np.abs(s - fit_arrays(n, a, b, y, method="dense"))) < 1e-8


def test_no_outcomes_means_all_zero() -> None:
    assert fit_scores(["a", "b", "c"], []) == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert fit_scores([], []) == {}
    assert fit_scores(["only"], []) == {"only": 0.0}


def test_only_ties_means_all_zero() -> None:
    scores = fit_scores(["a", "b", "c"], [Outcome("a", "b", "tie"), Outcome("b", "c", "tie")])
    assert scores == {"a": 0.0, "b": 0.0, "c": 0.0}


def test_one_win_z_scores_to_plus_minus_one() -> None:
    scores = fit_scores(["a", "b"], [Outcome("b", "a", "B")])
    assert scores["a"] == pytest.approx(1.0) and scores["b"] == pytest.approx(-1.0)


def test_zscore_maps_non_finite_to_zero() -> None:
    assert list(zscore(np.array([np.nan, np.inf, -np.inf]))) == [0.0, 0.0, 0.0]
    z = zscore(np.array([1.0, np.nan, 3.0]))
    assert np.isfinite(z).all() and z.mean() == pytest.approx(0.0)
    assert list(zscore(np.array([2.0, 2.0]))) == [0.0, 0.0]  # std <= 1e-6: centred only
    assert zscore(np.array([])).size == 0


def test_scores_do_not_depend_on_completion_order() -> None:
    rng = random.Random(5)
    ids = [f"g0-c{i}" for i in range(12)]
    outcomes = [random_outcome(rng, ids) for _ in range(60)]
    baseline = fit_scores(ids, outcomes)
    for _ in range(3):
        shuffled, shuffled_ids = outcomes[:], ids[:]
        rng.shuffle(shuffled)
        rng.shuffle(shuffled_ids)
        assert fit_scores(shuffled_ids, shuffled) == baseline  # bit-identical


def test_leaderboard_rows() -> None:
    ids = ["x", "w", "v", "u"]
    outcomes = [
        Outcome("x", "w", "A"),
        Outcome("w", "x", "B"),
        Outcome("v", "u", "tie"),
        Outcome("x", "v", "A"),
        Outcome("u", "w", "B"),
    ]
    rows = leaderboard(ids, outcomes, generations={"x": 2, "w": 1})
    x = rows[0]
    assert x.candidate_id == "x"
    assert (x.rank, x.tie_group, x.generation, x.wins, x.losses, x.ties, x.comparisons) == (
        1, 1, 2, 3, 0, 0, 3,
    )  # fmt: skip
    assert [r.rank for r in rows] == [1, 2, 3, 4]
    u = next(r for r in rows if r.candidate_id == "u")
    assert (u.generation, u.wins, u.losses, u.ties, u.comparisons) == (0, 0, 1, 1, 2)
    scores = [r.score for r in rows]
    assert scores == sorted(scores, reverse=True)


def test_equal_scores_share_a_tie_group_and_sort_by_id() -> None:
    ids = ["d", "c", "b", "a"]
    # a beats b and c beats d: a ~ c on top, b ~ d at the bottom, by symmetry.
    rows = leaderboard(ids, [Outcome("a", "b", "A"), Outcome("c", "d", "A")])
    assert [r.candidate_id for r in rows] == ["a", "c", "b", "d"]
    assert [r.tie_group for r in rows] == [1, 1, 2, 2]
    assert [r.rank for r in rows] == [1, 2, 3, 4]
    assert isinstance(rows[0], LeaderboardRow)
    flat = leaderboard(["b", "a"], [])
    assert [(r.candidate_id, r.tie_group, r.score) for r in flat] == [("a", 1, 0.0), ("b", 1, 0.0)]


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^an outcome names unknown candidate 'z'$"):
        fit_scores(["a", "b"], [Outcome("a", "z", "A")])
    with pytest.raises(ValueError, match=r"^an outcome compares a candidate with itself$"):
        fit_scores(["a", "b"], [Outcome("a", "a", "A")])
    with pytest.raises(ValueError, match=r"^candidate ids must be unique$"):
        fit_scores(["a", "a"], [])
    with pytest.raises(ValueError, match=r"^lambda must be > 0 \(got 0\.0\)$"):
        fit_arrays(2, np.array([0]), np.array([1]), np.array([1.0]), 0.0)


# -- rules pinned by hand-written values (what mutation testing found unpinned) --------------


def test_the_hessian_is_the_ridge_plus_the_weighted_laplacian() -> None:
    # One comparison at s = (ln 3, 0): p = 0.75, w = p (1 - p) = 0.1875.
    h = hessian(np.array([np.log(3.0), 0.0]), np.array([0]), np.array([1]), 0.5)
    assert np.allclose(h, [[0.6875, -0.1875], [-0.1875, 0.6875]], atol=1e-12)
    # At s = 0 every w is 0.25; the pair 0-1 judged twice adds up.
    h = hessian(np.zeros(3), np.array([0, 0, 1]), np.array([1, 1, 2]), 0.01)
    expected = [[0.51, -0.5, 0.0], [-0.5, 0.76, -0.25], [0.0, -0.25, 0.26]]
    assert np.allclose(h, expected, atol=1e-12)


def test_fit_scores_is_the_ridge_fit_at_the_given_lambda() -> None:
    rng = random.Random(11)
    ids = [f"c{i}" for i in range(8)]
    outcomes = [random_outcome(rng, ids) for _ in range(30)]
    index = {c: i for i, c in enumerate(sorted(ids))}
    a = np.array([index[o.presented_a] for o in outcomes])
    b = np.array([index[o.presented_b] for o in outcomes])
    y = np.array([o.y for o in outcomes])
    for lam, scores in (
        (0.01, fit_scores(ids, outcomes)),
        (1.0, fit_scores(ids, outcomes, lambda_=1.0)),
    ):
        reference = scipy_reference(len(ids), a, b, y, lam)
        assert max(abs(scores[c] - reference[index[c]]) for c in ids) < 1e-6, lam
    default, strong = fit_scores(ids, outcomes), fit_scores(ids, outcomes, lambda_=1.0)
    assert max(abs(default[c] - strong[c]) for c in ids) > 1e-3  # lambda matters here
    for lam in (0.01, 1.0):
        rows = leaderboard(ids, outcomes, **({} if lam == 0.01 else {"lambda_": lam}))
        assert {r.candidate_id: r.score for r in rows} == fit_scores(ids, outcomes, lambda_=lam)


def test_leaderboard_tallies_every_win_loss_and_tie() -> None:
    outcomes = [
        Outcome("a", "b", "tie"),
        Outcome("a", "c", "tie"),
        Outcome("c", "b", "tie"),
        Outcome("b", "a", "A"),
        Outcome("c", "a", "A"),
    ]
    tally = {
        r.candidate_id: (r.wins, r.losses, r.ties, r.comparisons)
        for r in leaderboard(["a", "b", "c"], outcomes)
    }
    assert tally == {"a": (0, 2, 2, 4), "b": (1, 0, 2, 3), "c": (1, 0, 2, 3)}


def test_zscore_by_hand() -> None:
    # NaN counts as 0: (1, 0, 3) centred is (-1, -4, 5) / 3, population std sqrt(14) / 3.
    expected = np.array([-1.0, -4.0, 5.0]) / np.sqrt(14.0)
    assert np.allclose(zscore(np.array([1.0, np.nan, 3.0])), expected, atol=1e-12)
    assert list(zscore(np.array([0.0, 1.0]))) == [-1.0, 1.0]  # std 0.5 < 1 is still divided
    assert list(zscore(np.array([5.0]))) == [0.0]  # one candidate: centred to 0


def test_auto_is_the_dense_newton_up_to_dense_max_n_then_cg() -> None:
    rng = np.random.default_rng(3)
    for n in (12, DENSE_MAX_N, DENSE_MAX_N + 1):
        m = 5 * n
        a = rng.integers(0, n, m)
        b = rng.integers(0, n - 1, m)
        b = np.where(b >= a, b + 1, b)
        y = (rng.random(m) < 0.6).astype(np.float64)
        auto = fit_arrays(n, a, b, y)
        dense = fit_arrays(n, a, b, y, method="dense")
        cg = fit_arrays(n, a, b, y, method="cg")
        # The two solvers agree to ~1e-11 but not bit for bit, so bits tell which one ran.
        assert not np.array_equal(dense, cg) and np.max(np.abs(dense - cg)) < 1e-8, n
        assert np.array_equal(auto, dense if n <= DENSE_MAX_N else cg), n


def test_a_loose_tolerance_still_steps_from_zero() -> None:
    # At s = 0 the gradient's norm is sqrt(0.5) ~ 0.71: under tol = 1, above tol * 1e-3.
    s = fit_arrays(2, np.array([0]), np.array([1]), np.array([1.0]), tol=1.0)
    assert s[0] > 0.5 and s[0] == pytest.approx(-s[1])
