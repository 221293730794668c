"""The benchmark's fit of the sim judge's own length model (``ranking_trust._mixture_fit``),
against the leaderboard's fit and against the model's likelihood maximised by scipy without the
benchmark's gradient."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize

from benchmarks import ranking_trust
from workflows.tournament.bradley_terry import canonical_arrays, fit_arrays
from workflows.tournament.judge_parse import Outcome, Winner

IDS = [f"c{i}" for i in range(5)]
WINNERS: tuple[Winner, ...] = ("A", "B")


def _field(seed: int) -> tuple[list[Outcome], dict[str, int]]:
    rng = random.Random(seed)
    outcomes = [
        Outcome(a, b, rng.choice(WINNERS)) for a in IDS for b in IDS if a != b for _ in range(2)
    ]
    return outcomes, {c: rng.randint(200, 1200) for c in IDS}


def test_with_no_weight_on_length_it_is_the_leaderboards_fit() -> None:
    outcomes, lengths = _field(1)
    scores = ranking_trust._mixture_fit(IDS, outcomes, lengths, 0.0)
    names, a, b, y = canonical_arrays(IDS, outcomes)
    expected = fit_arrays(len(names), a, b, y, ranking_trust.LAMBDA)
    assert [scores[c] for c in names] == pytest.approx(expected.tolist(), abs=1e-4)


@pytest.mark.parametrize("weight", [0.3, None], ids=["weight known", "weight fitted"])
def test_it_maximises_the_mixtures_likelihood(weight: float | None) -> None:
    outcomes, lengths = _field(2)
    scores = ranking_trust._mixture_fit(IDS, outcomes, lengths, weight)
    index = {c: i for i, c in enumerate(IDS)}

    def loss(x: np.ndarray) -> float:
        w = weight if weight is not None else 1 / (1 + math.exp(-x[-1]))
        total = 0.5 * ranking_trust.LAMBDA * float(x[: len(IDS)] @ x[: len(IDS)])
        for o in outcomes:
            d = x[index[o.presented_a]] - x[index[o.presented_b]]
            longer = lengths[o.presented_a] > lengths[o.presented_b]
            p = (1 - w) / (1 + math.exp(-d)) + w * longer
            total -= math.log(p if o.winner == "A" else 1 - p)
        return total

    start = np.zeros(len(IDS) + (weight is None))
    expected = minimize(
        loss, start, method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 20000}
    ).x
    got = np.array([scores[c] for c in IDS])
    # Scores are identified up to the ridge's pull on their mean: compare them as fitted.
    assert got.tolist() == pytest.approx(expected[: len(IDS)].tolist(), abs=2e-3)
