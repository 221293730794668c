"""The simulated provider's maths: accuracy calibration, judge probability, draws."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from activities import sim_math
from activities.sim_math import (
    beta_for_accuracy,
    draw_quality,
    is_calibrated,
    mean_accuracy,
    mutation_gain,
    p_a_wins,
    sigmoid,
)


@pytest.mark.parametrize("accuracy", [0.55, 0.75, 0.85, 0.95, 0.99])
def test_beta_round_trips_through_the_quadrature(accuracy: float) -> None:
    assert mean_accuracy(beta_for_accuracy(accuracy)) == pytest.approx(accuracy, abs=1e-9)


@pytest.mark.parametrize("accuracy", [0.75, 0.85, 0.95])
def test_beta_round_trips_by_monte_carlo(accuracy: float) -> None:
    # Draw pairs and verdicts the way the simulated judge does; count picks of the better one.
    rng = random.Random(20240601)
    beta = beta_for_accuracy(accuracy)
    trials = 100_000
    correct = 0
    for _ in range(trials):
        q_a, q_b = draw_quality(rng), draw_quality(rng)
        a_wins = rng.random() < p_a_wins(q_a, q_b, beta)
        correct += a_wins == (q_a > q_b)
    se = math.sqrt(accuracy * (1 - accuracy) / trials)
    assert abs(correct / trials - accuracy) < 4 * se


def test_beta_is_increasing_and_cached() -> None:
    betas = [beta_for_accuracy(a) for a in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)]
    assert betas[0] == 0.0
    assert betas == sorted(betas) and len(set(betas)) == len(betas)
    assert beta_for_accuracy(0.85) == beta_for_accuracy(0.85)


@pytest.mark.parametrize("accuracy", [0.49, 1.0, 1.5, -1.0, math.nan])
def test_impossible_accuracies_are_refused(accuracy: float) -> None:
    with pytest.raises(ValueError, match=r"\[0\.5, 1\)"):
        beta_for_accuracy(accuracy)


def test_p_a_wins() -> None:
    assert p_a_wins(0.3, 0.3, 5.0) == 0.5
    assert p_a_wins(1.0, 0.0, 2.0) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert p_a_wins(1.0, 0.0, 2.0) + p_a_wins(0.0, 1.0, 2.0) == pytest.approx(1.0)
    assert p_a_wins(1e6, -1e6, 10.0) == 1.0
    assert p_a_wins(-1e6, 1e6, 10.0) == 0.0
    assert sigmoid(-800.0) == 0.0 and sigmoid(800.0) == 1.0


def test_draws_are_deterministic_and_have_the_right_law() -> None:
    assert draw_quality(random.Random(3)) == draw_quality(random.Random(3))
    rng = random.Random(11)
    q = [draw_quality(rng) for _ in range(50_000)]
    assert abs(statistics.fmean(q)) < 0.02
    assert statistics.pstdev(q) == pytest.approx(1.0, abs=0.02)
    gains = [mutation_gain(rng) for _ in range(50_000)]
    assert min(gains) >= 0.0
    # E|N(0.3, 0.2)| = 0.3 * (1 - 2 Phi(-1.5)) + 0.2 * 2 phi(1.5)
    phi = math.exp(-1.125) / math.sqrt(2 * math.pi)
    big_phi = 0.5 * math.erfc(1.5 / math.sqrt(2))
    assert statistics.fmean(gains) == pytest.approx(0.3 * (1 - 2 * big_phi) + 0.4 * phi, abs=0.005)


def test_calibrations_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sim_math, "BETAS_REMEMBERED", 2)  # each bisection takes about 40 ms
    first = 0.61234
    beta = beta_for_accuracy(first)
    assert is_calibrated(first) and beta_for_accuracy(first) == beta
    for newer in (0.71234, 0.81234):  # as many newer accuracies as remembered: it is forgotten
        beta_for_accuracy(newer)
    assert not is_calibrated(first) and is_calibrated(0.81234)
    assert beta_for_accuracy(first) == beta  # computed again, the same number
