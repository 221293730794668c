"""The bootstrap's faster paths give the very bits the plain ones gave.

``RECORDED`` holds a digest of every float ``bootstrap`` returned, for fields shaped like the
built-in profiles' final rankings (ties, confidence weights, both length models, the percentile
and the likelihood intervals), as the code computed them before its resamples were refitted
once per distinct row and its profile's Hessians were built by one ``np.bincount``: any change
to a single bit of an interval, a top share or a length term fails here. The pieces are also
checked directly against their plain forms: every row refitted (``refit_weighted``) and the
Hessian built with ``np.add.at``.
"""

from __future__ import annotations

import hashlib
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from workflows.tournament.bootstrap import (
    Bootstrap,
    Design,
    bootstrap,
    refit_distinct,
    refit_weighted,
)
from workflows.tournament.bradley_terry import canonical_arrays, fit_arrays
from workflows.tournament.judge_parse import Outcome, Winner
from workflows.tournament.likelihood_intervals import _Objective
from workflows.tournament.rng import phase_rng
from workflows.tournament.schedule import k_regular_schedule

Case = tuple[str, int, int, int, str, str, bool]
"""(name, candidates, degree, resamples, intervals, length model or "", weighted)."""

CASES: list[Case] = [
    ("quick-0", 4, 2, 1000, "likelihood", "", False),
    ("quick-1", 4, 2, 1000, "likelihood", "", False),
    ("quick-2", 4, 2, 1000, "likelihood", "", False),
    ("quick-percentile", 4, 2, 1000, "percentile", "", False),
    ("quick-weighted", 4, 2, 1000, "likelihood", "", True),
    ("quick-additive", 4, 2, 1000, "likelihood", "additive", False),
    ("quick-mixture", 4, 2, 1000, "likelihood", "mixture", True),
    ("balanced", 8, 4, 1000, "likelihood", "", False),
    ("balanced-percentile", 8, 4, 500, "percentile", "", True),
    ("balanced-mixture", 8, 4, 300, "likelihood", "mixture", False),
    ("paper", 20, 10, 200, "likelihood", "", False),
]

RECORDED = {
    "quick-0": "7ed49276d77f4937f795",
    "quick-1": "7c1f5075fc3060c8b124",
    "quick-2": "518204be28b3517c5f4a",
    "quick-percentile": "386f597a3c2b524f8997",
    "quick-weighted": "6d01ed5e394dc974074d",
    "quick-additive": "4c9f793013c541d924ef",
    "quick-mixture": "2ad8a5d89a9a042fc048",
    "balanced": "4bf0555639e972e82af4",
    "balanced-percentile": "7c6b7de9a810a5f127bf",
    "balanced-mixture": "f35d5c2481ff720c06c4",
    "paper": "7861d48081aa2b4eb9be",
}


def field(case: Case) -> tuple[list[str], list[Outcome], list[float] | None, dict[str, int]]:
    """A case's candidates, judged outcomes (ties among them), weights and lengths."""
    name, n, k, *_ = case
    draw = random.Random(name)
    ids = [f"c{i}" for i in range(n)]
    quality = {c: draw.gauss(0.0, 1.0) for c in ids}
    outcomes = []
    for pair in k_regular_schedule(ids, k, phase_rng(len(name), "final_judging")):
        gap = quality[pair.presented_a] - quality[pair.presented_b]
        roll = draw.random()
        winner: Winner = "tie" if roll < 0.1 else ("A" if roll < 0.1 + 0.9 / (1 + 2**-gap) else "B")
        outcomes.append(Outcome(pair.presented_a, pair.presented_b, winner))
    weights = [1.0 + 2.0 * draw.random() for _ in outcomes]
    lengths = {c: draw.randint(200, 4000) for c in ids}
    return ids, outcomes, weights, lengths


def run(case: Case, *, lanes: int = 1) -> Bootstrap:
    name, _, _, resamples, intervals, model, weighted = case
    ids, outcomes, weights, lengths = field(case)
    with ThreadPoolExecutor(max_workers=lanes) as pool:
        return bootstrap(
            ids,
            outcomes,
            resamples=resamples,
            seed=sum(map(ord, name)),
            lanes=lanes,
            map_chunks=pool.map,
            weights=weights if weighted else None,
            lengths=lengths if model else None,
            length_model="mixture" if model == "mixture" else "additive",
            intervals="likelihood" if intervals == "likelihood" else "percentile",
        )


def digest(result: Bootstrap) -> str:
    floats: list[object] = [result.resamples, result.method]
    for values in (result.low, result.high, result.top_share):
        floats += [(cid, v.hex()) for cid, v in sorted(values.items())]
    if result.length is not None:
        floats.append(repr(result.length))
    return hashlib.sha256(repr(floats).encode()).hexdigest()[:20]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_results_are_the_recorded_bits(case: Case) -> None:
    assert digest(run(case)) == RECORDED[case[0]]


@pytest.mark.parametrize("case", [CASES[0], CASES[7]], ids=["quick-0", "balanced"])
def test_two_lanes_give_the_same_bits(case: Case) -> None:
    assert digest(run(case, lanes=2)) == RECORDED[case[0]]


@pytest.mark.parametrize("n,k,m", [(4, 2, 4), (6, 2, 6), (8, 4, 16)])
def test_refitting_each_distinct_row_once_gives_every_rows_refit(n: int, k: int, m: int) -> None:
    """Multinomial counts over few comparisons repeat (a quick ranking's 1,000 resamples of 4
    comparisons hold at most 35 distinct rows): each is refitted once and copied."""
    ids = [f"c{i}" for i in range(n)]
    draw = random.Random(n)
    pairs = k_regular_schedule(ids, k, phase_rng(n, "final_judging"))
    outcomes = [
        Outcome(p.presented_a, p.presented_b, draw.choice(["A", "B", "tie"])) for p in pairs
    ]
    names, a, b, y = canonical_arrays(ids, outcomes)
    assert len(a) == m
    design = Design(len(names), a, b, y)
    start = fit_arrays(len(names), a, b, y, 0.01)
    draws = np.random.default_rng(n).multinomial(m, np.full(m, 1.0 / m), size=600)
    counts = draws.astype(np.float64)
    plain = refit_weighted(design, counts, start, 0.01)
    for lanes in (1, 2):
        with ThreadPoolExecutor(max_workers=lanes) as pool:
            fast = refit_distinct(design, counts, start, 0.01, lanes=lanes, map_chunks=pool.map)
        assert fast.tobytes() == plain.tobytes()


def _plain_derivatives(f: _Objective, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient and Hessian as the objective built them before (``np.add.at``)."""
    n, a, b = f.n, f.a, f.b
    p = 0.5 * (1.0 + np.tanh(0.5 * (s[a] - s[b] + f.offset)))
    r = f.w * (p - f.y)
    g = f.lam * s + np.bincount(a, r, n) - np.bincount(b, r, n)
    c = f.w * p * (1.0 - p)
    h = np.zeros((n, n))
    np.add.at(h, (a, b), -c)
    np.add.at(h, (b, a), -c)
    h.flat[:: n + 1] = f.lam + np.bincount(a, c, n) + np.bincount(b, c, n)
    return g, h


def test_the_profiles_hessian_is_the_plain_one() -> None:
    """Repeated pairs in both orders: the Hessian's sums run in the same order as before."""
    rng = np.random.default_rng(7)
    for n in (2, 4, 9):
        m = 5 * n
        a = rng.integers(0, n, m)
        b = (a + rng.integers(1, n, m)) % n
        f = _Objective(
            n, a, b, rng.choice([0.0, 0.5, 1.0], m), 0.01, rng.random(m) * 3, rng.normal(size=m)
        )
        for _ in range(20):
            s = rng.normal(size=n) * 3
            g, h = f.derivatives(s)
            plain_g, plain_h = _plain_derivatives(f, s)
            assert g.tobytes() == plain_g.tobytes() and h.tobytes() == plain_h.tobytes()
