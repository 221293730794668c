"""Direct tests of the bootstrap's leaderboard scale and its likelihood intervals' path."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from workflows.tournament.bootstrap import _on_leaderboard_scale, bootstrap
from workflows.tournament.judge_parse import Outcome


def test_each_resample_is_centred_on_its_own_mean_and_divided_by_the_full_fit_s_spread() -> None:
    rows = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, np.inf]])
    full = np.array([0.0, 1.0, 2.0])  # spread: the standard deviation, sqrt(2/3)
    spread = np.sqrt(2 / 3)
    scaled = _on_leaderboard_scale(rows, full)
    assert scaled == pytest.approx(
        np.array([[-1.0, 0.0, 1.0], [0.0, 10.0, -10.0]]) / spread  # inf counts as 0
    )


def test_likelihood_intervals_bracket_each_point_on_the_leaderboard_scale() -> None:
    outcomes = [Outcome("a", "b", "A")] * 6 + [Outcome("b", "c", "A")] * 4
    outcomes += [Outcome("a", "c", "B"), Outcome("c", "b", "A")]
    result = bootstrap(["a", "b", "c"], outcomes, resamples=50, seed=2, intervals="likelihood")
    percentile = bootstrap(["a", "b", "c"], outcomes, resamples=50, seed=2)
    assert (result.method, percentile.method) == ("likelihood", "percentile")
    assert result.low != percentile.low
    for cid in "abc":
        assert result.low[cid] < result.high[cid]
    assert result.low["a"] > result.low["c"]


def test_the_refits_hold_the_length_term_of_the_controlled_fit() -> None:
    # "long" is the worst answer but always the longest, and the judge favours length hard:
    # the controlled fit ranks "best" first, the plain one "long". The resamples keep the
    # length term as a fixed offset, so they rank as the controlled fit does.
    rng = random.Random(7)
    ids = ["best", "good", "fair", "long"]
    quality = {"best": 1.0, "good": 0.5, "fair": 0.0, "long": -0.5}
    lengths = {"best": 100, "good": 100, "fair": 100, "long": 1000}
    outcomes = []
    for _ in range(400):
        a, b = rng.sample(ids, 2)
        d = (lengths[a] > lengths[b]) - (lengths[a] < lengths[b])
        p = 1 / (1 + math.exp(-(quality[a] - quality[b] + 3.0 * d)))
        outcomes.append(Outcome(a, b, "A" if rng.random() < p else "B"))
    held = bootstrap(ids, outcomes, resamples=100, seed=1, lengths=lengths)
    plain = bootstrap(ids, outcomes, resamples=100, seed=1)
    assert held.top_share["best"] > 0.9
    assert plain.top_share["long"] > 0.9
