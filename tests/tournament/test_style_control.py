"""Length control and confidence weights (``style_control``), the bootstrap that carries them,
the adaptive default budget and the confidence-vs-correctness figure: each checked against an
independent computation (scipy on the same objective written out here, closed forms, a
finite-difference Hessian, replicated comparisons, a brute-force pair count)."""

from __future__ import annotations

import json
import math
import random
from typing import Literal

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from workflows.inputs import InputInvalid, decode_json
from workflows.model_types import Usage
from workflows.tournament import style_control
from workflows.tournament.bootstrap import bootstrap
from workflows.tournament.bradley_terry import DENSE_MAX_N, Outcome, fit_arrays, leaderboard
from workflows.tournament.judge_parse import Winner
from workflows.tournament.judge_stats import confidence_vs_correctness
from workflows.tournament.length_mixture import mixture_fit
from workflows.tournament.preflight import preflight
from workflows.tournament.profiles import ADAPTIVE_SHARE, adaptive_pairs_budget
from workflows.tournament.style_control import (
    MIXTURE_MAX_N,
    UNIDENTIFIED_SHARE_SE,
    arrays,
    confidence_weight,
    controlled_fit,
    fit,
    length_feature,
)
from workflows.tournament.types import ComparisonRow, TournamentInput, Verdict


def _case(
    seed: int, n: int = 7, m: int = 80
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    y = rng.choice([0.0, 1.0, 0.5], m, p=[0.45, 0.45, 0.1])
    x = rng.normal(size=m)
    w = rng.uniform(1.0, 3.0, m)
    return a, b, y, x, w


def _objective(t: np.ndarray, n: int, a, b, y, x, w, lam: float) -> tuple[float, np.ndarray]:
    """The same objective, written out again: (value, gradient) in extended precision."""
    s, g = t[:n].astype(np.longdouble), np.longdouble(t[n])
    z = s[a] - s[b] + g * x
    value = 0.5 * lam * (s @ s) + w @ (np.logaddexp(0, z) - y * z)
    r = (w * (1 / (1 + np.exp(-z)) - y)).astype(np.float64)
    grad = np.append(lam * t[:n] + np.bincount(a, r, n) - np.bincount(b, r, n), r @ x)
    return float(value), grad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_joint_fit_matches_scipy_on_the_same_objective(seed: int) -> None:
    n, lam = 7, 0.05
    a, b, y, x, w = _case(seed, n)
    s, gamma, _ = fit(n, a, b, y, weights=w, feature=x, lambda_=lam)
    options = {"gtol": 1e-11, "ftol": 1e-16, "maxiter": 10000}
    reference = minimize(
        _objective, np.zeros(n + 1), args=(n, a, b, y, x, w, lam), jac=True,
        method="L-BFGS-B", options=options,
    ).x  # fmt: skip
    assert np.abs(s - reference[:n]).max() < 1e-5
    assert abs(gamma - reference[n]) < 1e-5


def test_the_coefficients_standard_error_is_the_inverse_hessians() -> None:
    n, lam = 6, 0.01
    a, b, y, x, w = _case(5, n, 120)
    s, gamma, se = fit(n, a, b, y, weights=w, feature=x, lambda_=lam)
    theta = np.append(s, gamma)
    # A central-difference Hessian of the gradient written out above.
    h, step = np.zeros((n + 1, n + 1)), 1e-5
    for i in range(n + 1):
        e = np.zeros(n + 1)
        e[i] = step
        up = _objective(theta + e, n, a, b, y, x, w, lam)[1]
        down = _objective(theta - e, n, a, b, y, x, w, lam)[1]
        h[:, i] = (up - down) / (2 * step)
    expected = math.sqrt(np.linalg.inv(0.5 * (h + h.T))[n, n])
    assert se == pytest.approx(expected, rel=1e-4)


def test_without_feature_or_weights_it_is_the_leaderboards_fit() -> None:
    n = 9
    a, b, y, _, _ = _case(3, n, 100)
    s, gamma, se = fit(n, a, b, y, lambda_=0.01)
    assert np.abs(s - fit_arrays(n, a, b, y, 0.01)).max() < 1e-9
    assert gamma == se == 0.0


def test_integer_weights_fit_like_repeated_comparisons() -> None:
    n = 6
    a, b, y, x, _ = _case(4, n, 50)
    w = np.random.default_rng(4).integers(1, 4, len(a)).astype(float)
    s, gamma, _ = fit(n, a, b, y, weights=w, feature=x)
    times = w.astype(int)
    s2, gamma2, _ = fit(
        n, np.repeat(a, times), np.repeat(b, times), np.repeat(y, times),
        feature=np.repeat(x, times),
    )  # fmt: skip
    assert np.abs(s - s2).max() < 1e-8 and abs(gamma - gamma2) < 1e-8


def test_two_candidates_of_fixed_lengths_hand_length_everything() -> None:
    # Length and identity cannot be told apart, so the penalty on s leaves the scores at 0 and
    # the coefficient is the unpenalised log-odds of the longer one winning: log(7/3).
    lengths = {"long": 300, "short": 100}
    outcomes = [Outcome("long", "short", "A")] * 4 + [Outcome("short", "long", "B")] * 3
    outcomes += [Outcome("long", "short", "B")] * 2 + [Outcome("short", "long", "A")]
    fitted = controlled_fit(["long", "short"], outcomes, lengths=lengths)
    assert fitted.length is not None
    assert fitted.length.comparisons == fitted.length.differing == 10
    assert fitted.length.coefficient == pytest.approx(math.log(7 / 3), abs=1e-7)
    assert np.abs(fitted.raw).max() < 1e-7
    # Weighted: the long one's wins weigh 3, its losses 1: log(21/3).
    weights = [3.0] * 7 + [1.0] * 3
    weighted = controlled_fit(["long", "short"], outcomes, lengths=lengths, weights=weights)
    assert weighted.length is not None
    assert weighted.length.coefficient == pytest.approx(math.log(21 / 3), abs=1e-7)
    # Wald, from the Hessian lambda*diag(1, 1, 0) + C*u*u^T with u = (1, -1, 1) (every
    # comparison bends the objective only along s_long - s_short + gamma) and C the sum of
    # p(1-p) at p = 0.7: solving H v = e_gamma by hand gives v_gamma = 1/C + 2/lambda. Only the
    # penalty tells length from identity here, and the interval is as wide as that deserves.
    curvature = 10 * 0.7 * 0.3
    se = math.sqrt(1 / curvature + 2 / 0.01)
    assert fitted.length.standard_error == pytest.approx(se, rel=1e-6)
    assert fitted.length.low == pytest.approx(math.log(7 / 3) - norm.ppf(0.975) * se, rel=1e-6)
    assert not fitted.length.identified and not fitted.length.significant


def test_the_length_feature_by_hand() -> None:
    x = length_feature(np.array([300.0, 100.0, 200.0]), np.array([100.0, 100.0, 600.0]))
    assert x.tolist() == [1.0, 0.0, -1.0]


def test_the_controlled_fit_does_not_depend_on_completion_order() -> None:
    rng = random.Random(8)
    ids = [f"c{i}" for i in range(6)]
    lengths = {c: rng.randint(100, 900) for c in ids}
    outcomes = [_random_outcome(rng, ids, ["A", "B", "tie"]) for _ in range(60)]
    weights = [confidence_weight(rng.random()) for _ in outcomes]
    one = controlled_fit(ids, outcomes, lengths=lengths, weights=weights)
    order = list(range(len(outcomes)))
    rng.shuffle(order)
    other = controlled_fit(
        list(reversed(ids)),
        [outcomes[i] for i in order],
        lengths=lengths,
        weights=[weights[i] for i in order],
    )
    assert one.scores == other.scores and one.length == other.length


def test_dense_and_conjugate_gradients_agree_past_dense_max_n() -> None:
    n = DENSE_MAX_N + 16
    rng = np.random.default_rng(11)
    a = rng.integers(0, n, 3000)
    b = (a + rng.integers(1, n, 3000)) % n
    y = rng.choice([0.0, 1.0], 3000)
    x = rng.normal(size=3000)
    s, gamma, se = fit(n, a, b, y, feature=x)
    options = {"gtol": 1e-11, "ftol": 1e-16, "maxiter": 20000}
    w = np.ones(3000)
    reference = minimize(
        _objective, np.zeros(n + 1), args=(n, a, b, y, x, w, 0.01), jac=True,
        method="L-BFGS-B", options=options,
    ).x  # fmt: skip
    assert np.abs(s - reference[:n]).max() < 1e-4 and abs(gamma - reference[n]) < 1e-5
    assert se > 0


def test_length_control_recovers_the_ranking_a_length_effect_hides() -> None:
    # Qualities and lengths drawn independently; the judge adds 1.5 log-odds for the longer
    # answer. The controlled fit's order is closer to the qualities' on average.
    gains, covered = [], 0
    for seed in range(20):
        rng = random.Random(seed)
        ids = [f"c{i:02d}" for i in range(12)]
        quality = {c: rng.gauss(0, 1) for c in ids}
        lengths = {c: rng.randint(200, 1200) for c in ids}
        outcomes = []
        for _ in range(300):
            a, b = rng.sample(ids, 2)
            d = 1 if lengths[a] > lengths[b] else -1 if lengths[a] < lengths[b] else 0
            p = 1 / (1 + math.exp(-(quality[a] - quality[b] + 1.5 * d)))
            outcomes.append(Outcome(a, b, "A" if rng.random() < p else "B"))
        truth = sorted(ids, key=lambda c: -quality[c])
        plain = [r.candidate_id for r in leaderboard(ids, outcomes)]
        fitted = controlled_fit(ids, outcomes, lengths=lengths)
        controlled = sorted(ids, key=lambda c: (-fitted.scores[c], c))
        gains.append(_tau(controlled, truth) - _tau(plain, truth))
        assert fitted.length is not None
        covered += fitted.length.low < 1.5 < fitted.length.high
    assert sum(gains) / len(gains) > 0.1
    assert covered >= 17  # the coefficient's 95% interval holds the true effect


def _tau(order: list[str], truth: list[str]) -> float:
    pos = {c: i for i, c in enumerate(order)}
    n = len(truth)
    agree = sum(
        1 if pos[truth[i]] < pos[truth[j]] else -1 for i in range(n) for j in range(i + 1, n)
    )
    return agree / (n * (n - 1) / 2)


def test_the_bootstrap_of_the_controlled_fit_brackets_its_point_and_reports_the_term() -> None:
    rng = random.Random(2)
    ids = [f"c{i}" for i in range(8)]
    lengths = {c: rng.randint(100, 900) for c in ids}
    outcomes = [_random_outcome(rng, ids, ["A", "B"]) for _ in range(120)]
    weights = [confidence_weight(rng.random()) for _ in outcomes]
    result = bootstrap(ids, outcomes, resamples=200, seed=3, lengths=lengths, weights=weights)
    point = controlled_fit(ids, outcomes, lengths=lengths, weights=weights)
    assert result.resamples == 200 and result.length == point.length
    for cid in ids:
        assert result.low[cid] <= point.scores[cid] + 1e-9 <= result.high[cid] + 2e-9
    # Equal lengths put no offset in the refits and weights of 1 change no count: the plain
    # bootstrap's bits.
    same = dict.fromkeys(ids, 500)
    plain = bootstrap(ids, outcomes, resamples=200, seed=3)
    held = bootstrap(
        ids, outcomes, resamples=200, seed=3, lengths=same, weights=[1.0] * len(outcomes)
    )
    for cid in ids:  # the same up to the start's last bits (the two Newtons differ in them)
        assert held.low[cid] == pytest.approx(plain.low[cid], abs=1e-9)
        assert held.high[cid] == pytest.approx(plain.high[cid], abs=1e-9)
    assert held.length is not None and held.length.differing == 0
    assert not held.length.significant


def test_confidence_weights() -> None:
    assert confidence_weight(None) == 1.0
    assert confidence_weight(0.0) == 1.0
    assert confidence_weight(0.5) == 2.0
    assert confidence_weight(1.0) == 3.0


def test_the_adaptive_default_budget() -> None:
    assert ADAPTIVE_SHARE == 0.3
    # 20 candidates, 10-regular: 100 pairs -> 30.
    assert adaptive_pairs_budget(100, 20, ADAPTIVE_SHARE) == 30
    # 8 candidates, 3-regular: 12 pairs -> 3.6, raised to n = 8.
    assert adaptive_pairs_budget(12, 8, ADAPTIVE_SHARE) == 8
    # Never past the k-regular pairs, and a share of 1 is all of them.
    assert adaptive_pairs_budget(4, 8, ADAPTIVE_SHARE) == 4
    assert adaptive_pairs_budget(16, 8, 1.0) == 16


def _random_outcome(rng: random.Random, ids: list[str], winners: list[Winner]) -> Outcome:
    a, b = rng.sample(ids, 2)
    return Outcome(a, b, rng.choice(winners))


def _row(
    i: int, a: str, b: str, winner: Winner, confidence: float | None, verdicts: list | None = None
) -> ComparisonRow:
    return ComparisonRow(
        id=f"r{i}", phase="final_judging", generation=None, presented_a=a, presented_b=b,
        scheduled_a=a, scheduled_b=b, winner=winner, confidence=confidence, critique_a="",
        critique_b="", model="sim:default", provider="sim", attempts=1, usage=Usage(),
        verdicts=verdicts,
    )  # fmt: skip


def test_confidence_against_correctness_by_hand() -> None:
    quality = {"x": 1.0, "y": 0.0, "z": 0.0}
    rows = [
        _row(0, "x", "y", "A", 0.9),  # right
        _row(1, "y", "x", "B", 0.6),  # right
        _row(2, "x", "y", "B", 0.3),  # wrong
        _row(3, "y", "x", "A", 0.6),  # wrong
        _row(4, "x", "y", "tie", 0.8),  # a tie: left out
        _row(5, "y", "z", "A", 0.8),  # equal qualities: left out
        _row(6, "x", "y", "A", None),  # no confidence: left out
        _row(
            7,
            "x",
            "y",
            "A",
            None,
            [
                Verdict(judge="j1", presented_a="x", presented_b="y", winner="A", confidence=0.2),
                Verdict(judge="j2", presented_a="y", presented_b="x", winner="A", confidence=0.7),
            ],
        ),
    ]
    out = confidence_vs_correctness(rows, quality)
    assert out is not None
    right, wrong = [0.9, 0.6, 0.2], [0.3, 0.6, 0.7]
    assert out["verdicts"] == 6 and out["correct"]["count"] == 3
    assert out["mean_confidence_correct"] == pytest.approx(sum(right) / 3)
    assert out["mean_confidence_incorrect"] == pytest.approx(sum(wrong) / 3)
    pairs = [(r > w) + 0.5 * (r == w) for r in right for w in wrong]
    assert out["concordance"] == pytest.approx(sum(pairs) / len(pairs))
    assert confidence_vs_correctness(rows[4:6], quality) is None


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"adaptive_share": 0}, "adaptive_share: Input should be greater than 0"),
        ({"adaptive_share": 1.5}, "adaptive_share: Input should be less than or equal to 1"),
        ({"length_control": "yes please"}, "length_control: Input should be a valid boolean"),
        ({"weight_by_confidence": 3}, "weight_by_confidence: Input should be a valid boolean"),
    ],
)
def test_the_new_fields_past_their_bounds_are_refused_at_decode(
    fields: dict[str, object], needle: str
) -> None:
    with pytest.raises(InputInvalid) as info:
        decode_json(TournamentInput, json.dumps({"task": "t", **fields}))
    assert needle in info.value.message


def test_the_adaptive_share_reaches_the_plan() -> None:
    adaptive = TournamentInput(task="t", profile="balanced", schedule="adaptive")
    assert adaptive.adaptive_pairs_share == ADAPTIVE_SHARE
    assert TournamentInput(task="t", profile="balanced").adaptive_pairs_share is None
    calls = {p.phase: p.calls for p in preflight(adaptive).tournament.phases}
    assert calls["generation_judging:1"] == 8 and calls["final_judging"] == 8
    whole = adaptive.model_copy(update={"adaptive_share": 1.0})
    calls = {p.phase: p.calls for p in preflight(whole).tournament.phases}
    assert calls["generation_judging:1"] == 12 and calls["final_judging"] == 16


def test_lengths_that_decide_every_verdict_leave_the_coefficient_unidentified() -> None:
    # The longer always wins and each candidate has one length: nothing tells length from
    # strength. The fit ends (the unpenalised coefficient drifts off), scores tie at 0, and
    # the term says it is not identified rather than report a huge, "significant" effect.
    ids = [f"c{i}" for i in range(5)]
    lengths = {c: 100 * (i + 1) for i, c in enumerate(ids)}
    outcomes = [
        Outcome(a, b, "A" if lengths[a] > lengths[b] else "B") for a in ids for b in ids if a != b
    ]
    fitted = controlled_fit(ids, outcomes, lengths=lengths)
    assert fitted.length is not None and fitted.length.coefficient > 10
    assert not fitted.length.identified and not fitted.length.significant
    assert max(abs(v) for v in fitted.scores.values()) < 1e-9


def test_the_reports_sentences_on_the_fit() -> None:
    from activities.tournament.report_trust import fit_sentences

    term = {"coefficient": 0.7, "low": 0.2, "high": 1.2, "significant": True, "identified": True}
    (sentence,) = fit_sentences(term, "none", {})
    assert "gains +0.70 log-odds (odds x2.01; 95% CI +0.20 to +1.20)" in sentence
    assert "favours the longer candidate beyond chance" in sentence
    lost = fit_sentences(term | {"identified": False, "coefficient": 26.0}, "none", {})
    assert "cannot tell the candidates' lengths from their own strength" in lost[0]
    assert "26" not in lost[0]
    agree = {
        "verdicts": 40,
        "correct": {"rate": 0.75},
        "mean_confidence_correct": 0.61,
        "mean_confidence_incorrect": 0.32,
        "concordance": 0.7,
    }
    weighted = fit_sentences(None, "confidence", {"confidence_vs_correctness": agree})
    assert "counts three times" in weighted[0]
    assert "0.61 when right and 0.32 when wrong" in weighted[1] and "70%" in weighted[1]
    assert fit_sentences(None, "none", {}) == []


def test_past_dense_max_n_without_a_feature_it_is_the_leaderboards_fit() -> None:
    n = DENSE_MAX_N + 8
    a, b, y, _, _ = _case(4, n, 1500)
    s, gamma, se = fit(n, a, b, y, lambda_=0.01)
    assert np.abs(s - fit_arrays(n, a, b, y, 0.01)).max() < 1e-6
    assert gamma == se == 0.0


def test_one_comparison_is_fitted() -> None:
    s, _, _ = fit(2, np.array([0]), np.array([1]), np.array([1.0]), lambda_=0.01)
    assert s[0] > 0 > s[1]
    assert (
        np.abs(s - fit_arrays(2, np.array([0]), np.array([1]), np.array([1.0]), 0.01)).max() < 1e-9
    )


def test_the_standard_error_when_the_last_candidate_is_never_shown_second() -> None:
    n, lam = 5, 0.01
    a, b, y, x, w = _case(8, n, 120)
    last = b == n - 1
    a, b = np.where(last, b, a), np.where(last, a, b)
    assert not np.any(b == n - 1) and np.any(a == n - 1)
    s, gamma, se = fit(n, a, b, y, weights=w, feature=x, lambda_=lam)
    theta = np.append(s, gamma)
    h, step = np.zeros((n + 1, n + 1)), 1e-5
    for i in range(n + 1):
        e = np.zeros(n + 1)
        e[i] = step
        up = _objective(theta + e, n, a, b, y, x, w, lam)[1]
        down = _objective(theta - e, n, a, b, y, x, w, lam)[1]
        h[:, i] = (up - down) / (2 * step)
    expected = math.sqrt(np.linalg.inv(0.5 * (h + h.T))[n, n])
    assert se == pytest.approx(expected, rel=1e-4)


def test_a_fit_that_starts_within_the_tolerance_still_polishes() -> None:
    # The gradient at zero is about 1.4e-8: under the tolerance, above its polishing floor.
    y = np.array([0.5 + 1e-8])
    s, _, _ = fit(2, np.array([0]), np.array([1]), y, lambda_=0.01)
    assert s[0] > 0 > s[1]
    assert np.abs(s - fit_arrays(2, np.array([0]), np.array([1]), y, 0.01)).max() < 1e-12


def test_past_its_ceiling_the_mixture_gives_way_to_the_additive_term(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mixture's cost is cubic in the candidates: past ``MIXTURE_MAX_N`` (100) the additive
    term ranks (``ponder rank`` takes 1,000 candidates), and the length term says so. Checked at
    a ceiling of 6, for speed."""
    assert MIXTURE_MAX_N == 100
    monkeypatch.setattr(style_control, "MIXTURE_MAX_N", 6)
    rng = random.Random(5)
    for n, model in ((6, "mixture"), (7, "additive")):
        ids = [f"c{i}" for i in range(n)]
        lengths = {c: rng.randint(100, 900) for c in ids}
        outcomes = [_random_outcome(rng, ids, ["A", "B"]) for _ in range(4 * n)]
        asked = controlled_fit(ids, outcomes, lengths=lengths, model="mixture")
        assert asked.length is not None and asked.length.model == model, n
        if model == "additive":
            additive = controlled_fit(ids, outcomes, lengths=lengths)
            assert np.array_equal(asked.raw, additive.raw)
            assert asked.length == additive.length


def test_the_mixture_mode_is_length_mixtures_fit_in_any_order() -> None:
    rng = random.Random(21)
    ids = [f"c{i}" for i in range(7)]
    lengths = {c: rng.randint(100, 900) for c in ids}
    outcomes = [_random_outcome(rng, ids, ["A", "B", "tie"]) for _ in range(50)]
    weights = [confidence_weight(rng.random()) for _ in outcomes]
    one = controlled_fit(ids, outcomes, lengths=lengths, weights=weights, model="mixture")
    arr = arrays(ids, outcomes, lengths=lengths, weights=weights)
    assert arr.feature is not None
    mix = mixture_fit(7, arr.a, arr.b, arr.y, arr.feature, weights=arr.weights, lambda_=0.01)
    assert one.length is not None and one.length.model == "mixture"
    assert one.length.coefficient == mix.share and one.offset is None
    assert (one.length.low, one.length.high) == (mix.low, mix.high)
    assert np.array_equal(one.raw, mix.scores)
    order = list(range(len(outcomes)))
    rng.shuffle(order)
    other = controlled_fit(
        list(reversed(ids)),
        [outcomes[i] for i in order],
        lengths=lengths,
        weights=[weights[i] for i in order],
        model="mixture",
    )
    assert one.scores == other.scores and one.length == other.length


@pytest.mark.parametrize("intervals", ["likelihood", "percentile"])
def test_the_mixtures_intervals_hold_its_points_and_the_additive_path_is_unchanged(
    intervals: Literal["likelihood", "percentile"],
) -> None:
    rng = random.Random(22)
    ids = [f"c{i}" for i in range(8)]
    lengths = {c: rng.randint(100, 900) for c in ids}
    outcomes = [_random_outcome(rng, ids, ["A", "B"]) for _ in range(60)]
    mixed = bootstrap(
        ids, outcomes, resamples=200, seed=3, lengths=lengths, length_model="mixture",
        intervals=intervals,
    )  # fmt: skip
    fitted = controlled_fit(ids, outcomes, lengths=lengths, model="mixture")
    assert mixed.length == fitted.length
    for c in ids:
        assert mixed.low[c] <= fitted.scores[c] <= mixed.high[c]
        assert mixed.high[c] - mixed.low[c] > 0.1
    plain = bootstrap(ids, outcomes, resamples=200, seed=3, lengths=lengths, intervals=intervals)
    additive = bootstrap(
        ids, outcomes, resamples=200, seed=3, lengths=lengths, length_model="additive",
        intervals=intervals,
    )  # fmt: skip
    assert plain == additive and plain.length is not None and plain.length.model == "additive"


def test_two_candidates_of_fixed_lengths_leave_the_mixtures_share_unidentified() -> None:
    # As for the additive term, length and identity cannot be told apart: the share's
    # posterior stays nearly as wide as its flat prior, so the term is marked unidentified.
    lengths = {"long": 300, "short": 100}
    outcomes = [Outcome("long", "short", "A")] * 4 + [Outcome("short", "long", "B")] * 3
    outcomes += [Outcome("long", "short", "B")] * 2 + [Outcome("short", "long", "A")]
    fitted = controlled_fit(["long", "short"], outcomes, lengths=lengths, model="mixture")
    assert fitted.length is not None and fitted.length.model == "mixture"
    assert fitted.length.standard_error > UNIDENTIFIED_SHARE_SE
    assert not fitted.length.identified and not fitted.length.significant


@pytest.mark.parametrize("weights", [[1.0], [1.0, 0.0], [1.0, float("nan")], [1.0, -2.0]])
def test_weights_that_are_not_one_positive_number_per_outcome_are_refused(
    weights: list[float],
) -> None:
    outcomes = [Outcome("a", "b", "A"), Outcome("b", "a", "A")]
    with pytest.raises(ValueError) as caught:
        controlled_fit(["a", "b"], outcomes, weights=weights)
    assert str(caught.value) == "weights must be positive numbers, one per outcome"


def test_the_controlled_fit_is_the_joint_fit_at_its_ridge_with_its_offsets() -> None:
    outcomes = [Outcome("b", "a", "A"), Outcome("a", "c", "A"), Outcome("c", "b", "B")] * 3
    lengths = {"a": 100, "b": 300, "c": 200}
    result = controlled_fit(["c", "a", "b"], outcomes, lengths=lengths, lambda_=1.0)
    assert result.ids == ["a", "b", "c"]
    # the arrays in canonical order, fitted by hand at the same ridge
    ids = ["a", "b", "c"]
    a = np.array([ids.index(o.presented_a) for o in outcomes])
    b = np.array([ids.index(o.presented_b) for o in outcomes])
    y = np.array([o.y for o in outcomes])
    x = length_feature(
        np.array([lengths[o.presented_a] for o in outcomes], np.float64),
        np.array([lengths[o.presented_b] for o in outcomes], np.float64),
    )
    s, gamma, _ = fit(3, a, b, y, feature=x, lambda_=1.0)
    assert np.abs(result.raw - s).max() < 1e-8
    assert result.length is not None and result.length.coefficient == pytest.approx(gamma)
    assert result.offset is not None
    assert sorted(result.offset.tolist()) == pytest.approx(sorted((gamma * x).tolist()))
    assert np.any(result.offset != 0)
