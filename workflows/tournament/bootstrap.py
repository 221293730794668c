"""Bootstrap on the leaderboard: resample the comparisons, refit Bradley-Terry.

Pure (numpy, no Temporal import); the ``bootstrap_leaderboard`` local activity runs it once,
on the final ranking. Runs since ``tournament-2026-12f`` take their 95% intervals from the
profile likelihood (``likelihood_intervals``: the percentiles below left undefeated and winless
candidates short of their true quality, since no resample makes them lose or win) and the
resamples give the top shares; the percentile intervals remain for runs before it and for
fields past ``PROFILE_MAX_N``. A resample draws the phase's comparisons with replacement
(multinomial counts over them), refits the same penalised objective as the leaderboard, and
puts the result on the leaderboard's scale (centred, divided by the full-data fit's spread: one
divisor for every resample); a percentile interval is the 2.5th to 97.5th percentile of the
candidate's score over the resamples, widened where needed to take in its own point (a
candidate with a few comparisons, all won or all lost, can have its resamples pile up on one side
of it). The generator is numpy's PCG64 seeded from the run, so the same comparisons and seed give
the same intervals.

A run fitted with confidence weights or a length term (``style_control``) is resampled the
same way: a resample's counts are multiplied by the comparisons' weights, and the length term
is held at its full-data value, a fixed offset ``gamma_hat * x_k`` on each comparison, so the
refits stay this batched n-dimensional Newton. Its intervals are thus the scores' spread given
the length effect; the coefficient's own uncertainty is its Wald interval, reported beside
them (refitting gamma in every resample would add a dimension to every batched solve).

All resamples are refitted at once: damped Newton on a ``(resamples, n)`` score matrix, warm
started at the full-data fit (a resample is close to it, so a handful of steps converge), with
batched Hessians ``lambda*I + X^T diag(w) X`` (``X`` the comparisons' +-1 incidence matrix) and
one batched solve per step; the gradient's and Hessian's sums over comparisons are segment sums
(``_Segments``). Work is bounded: resamples are processed in chunks of at most
``CHUNK_FLOATS`` matrix entries, and cut to ``WORK_CEILING`` floating-point operations in all
(the summary says how many ran); under ``MIN_RESAMPLES`` no intervals are given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from workflows.tournament.bradley_terry import (
    FloatArray,
    IntArray,
    canonical_arrays,
    fit_arrays,
    zscore,
)
from workflows.tournament.judge_parse import Outcome
from workflows.tournament.likelihood_intervals import profile_intervals
from workflows.tournament.style_control import LengthModel, LengthTerm, controlled_fit
from workflows.tournament.style_control import arrays as style_arrays

__all__ = [
    "CHUNK_FLOATS",
    "LANE_ROWS",
    "LEVEL",
    "MIN_RESAMPLES",
    "PROFILE_MAX_N",
    "WORK_CEILING",
    "Bootstrap",
    "Design",
    "IntervalMethod",
    "MapChunks",
    "bootstrap",
    "rank_intervals",
    "refit_distinct",
    "refit_weighted",
    "resamples_within_ceiling",
]

LEVEL = 0.95
MIN_RESAMPLES = 100
# ~2e9 flops was about a second of one core when the refits formed dense products; the work
# estimate still counts those, so with segment sums it overstates (the paper profile's 1,000
# refits: 98 ms before, 72 ms after): a conservative ceiling.
WORK_CEILING = 2e9
CHUNK_FLOATS = 4_000_000  # 32 MB per (chunk, n, comparisons) array
LANE_ROWS = 100
"""The fewest rows a chunk of refits is given when there are several lanes: fewer are done
sooner in the calling thread than handed to another."""
_NEWTON_STEPS = 8  # the work estimate's steps per refit (measured: 4-6 from the warm start)
_MAX_STEPS = 50
_TOL = 1e-7

IntervalMethod = Literal["percentile", "likelihood"]
"""How the 95% intervals are made: the resamples' percentiles (runs before the
``tournament-2026-12f`` patch), or profile likelihood (``likelihood_intervals``), where the
resamples give the top shares only."""
PROFILE_MAX_N = 48
"""Profile intervals up to this many candidates (20 candidates and 100 comparisons take about
0.08 s of CPU, 40 and 200 about 0.2 s; 2n edges of a few n-dimensional solves each: the work
grows as ``n**4`` in a large field); past it, percentile intervals."""


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """Intervals per candidate id (empty when none were computed) and how they were made."""

    resamples: int
    """Resamples refitted (0: none; see ``requested``)."""
    requested: int
    seed: int
    low: dict[str, float]
    high: dict[str, float]
    top_share: dict[str, float]
    """Share of resamples in which each candidate has the top score."""
    length: LengthTerm | None = None
    """With lengths: the full-data fit's length coefficient, held fixed in the refits."""
    method: IntervalMethod = "percentile"
    """How ``low`` and ``high`` were made."""


def resamples_within_ceiling(requested: int, n: int, comparisons: int) -> int:
    """``requested``, cut so the refits stay within ``WORK_CEILING``; 0 under ``MIN_RESAMPLES``."""
    distinct = min(comparisons, n * (n - 1) // 2)
    per_refit = _NEWTON_STEPS * (2.0 * comparisons * (2 * n + distinct) + n**3)
    allowed = min(requested, int(WORK_CEILING // max(per_refit, 1.0)))
    return allowed if allowed >= min(MIN_RESAMPLES, requested) else 0


def _softplus(d: FloatArray) -> FloatArray:
    """``log(1 + e^d)``, stably: what ``np.logaddexp(0, d)`` computes, by its own formula, in
    about 0.4 of its time on a bootstrap's ``(resamples, comparisons)`` arrays (numpy's
    logaddexp has no vectorised loop); a paper run's bootstrap takes 5-20% less CPU."""
    return np.maximum(d, 0.0) + np.log1p(np.exp(-np.abs(d)))


class _Segments:
    """Sums of each row's entries by group (``group[k]`` names entry ``k``'s, of ``groups``):
    one pass over the entries (``np.add.reduceat``), where the product with a 0/1 matrix
    (``np.einsum``, kept off a multi-threaded BLAS) cost the entries times the groups."""

    def __init__(self, group: IntArray, groups: int) -> None:
        self.order = np.argsort(group, kind="stable")
        counts = np.bincount(group, minlength=groups)
        self.present = counts > 0
        self.starts = (np.cumsum(counts) - counts)[self.present]

    def sums(self, values: FloatArray) -> FloatArray:
        grouped = np.add.reduceat(values[:, self.order], self.starts, axis=1)
        if self.present.all():
            return grouped
        out = np.zeros((values.shape[0], len(self.present)))
        out[:, self.present] = grouped
        return out


class Design:
    """The comparisons, grouped for the gradient (by candidate) and the Hessian (by pair)."""

    def __init__(
        self, n: int, a: IntArray, b: IntArray, y: FloatArray, offset: FloatArray | None = None
    ) -> None:
        self.n, self.a, self.b, self.y = n, a, b, y
        self.offset = np.zeros(len(a)) if offset is None else offset
        """A fixed term added to each comparison's score difference (the length term)."""
        self.by_candidate = _Segments(np.concatenate([a, b]), n)
        """Entry ``k`` of ``[r, -r]`` is comparison ``k``'s gradient term for its ``a`` (then its
        ``b``): summed by candidate, they are ``x^T r``."""
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys, inverse = np.unique(lo * n + hi, return_inverse=True)
        self.by_pair = _Segments(inverse, len(keys))
        self.lo, self.hi = keys // n, keys % n

    def objective(self, s: FloatArray, w: FloatArray, lam: float) -> FloatArray:
        d = s[:, self.a] - s[:, self.b] + self.offset
        data = np.einsum("bm,bm->b", w, _softplus(d) - self.y * d)
        return 0.5 * lam * np.einsum("bi,bi->b", s, s) + data

    def gradients(self, s: FloatArray, w: FloatArray, lam: float) -> tuple[FloatArray, FloatArray]:
        """The objective's gradient at each row of ``s``, and each comparison's win chance."""
        p = 0.5 * (1.0 + np.tanh(0.5 * (s[:, self.a] - s[:, self.b] + self.offset)))
        r = w * (p - self.y)
        return lam * s + self.by_candidate.sums(np.concatenate([r, -r], axis=1)), p

    def hessians(self, curvature: FloatArray, lam: float) -> FloatArray:
        """``lam*I + x^T diag(c) x`` per row of ``curvature``: each distinct pair's curvature,
        negated, off the diagonal, and on it ``lam`` plus the row's off-diagonal sum negated
        (a weighted Laplacian's rows sum to zero)."""
        h = np.zeros((curvature.shape[0], self.n, self.n))
        pair_w = self.by_pair.sums(curvature)
        h[:, self.lo, self.hi] = -pair_w
        h[:, self.hi, self.lo] = -pair_w
        diagonal = np.arange(self.n)
        h[:, diagonal, diagonal] = lam - h.sum(axis=2)
        return h


def refit_weighted(
    design: Design, weights: FloatArray, start: FloatArray, lambda_: float
) -> FloatArray:
    """Minimisers for each row of ``weights`` (comparison counts), from ``start``: batched,
    damped Newton until every gradient norm is below ``_TOL``.

    A row whose gradient is small enough is done: it leaves the batch, and later steps compute
    only the rows still moving (a done row's step is zero, so recomputing it, as this did
    before, gave the very same numbers; most rows are done after 4-5 steps and a few take 8)."""
    b = weights.shape[0]
    s = np.tile(start, (b, 1))
    f = design.objective(s, weights, lambda_)
    rows = np.arange(b)
    """The rows still moving."""
    for _ in range(_MAX_STEPS):
        s_now, w_now = s[rows], weights[rows]
        g, p = design.gradients(s_now, w_now, lambda_)
        active = np.sqrt(np.einsum("bi,bi->b", g, g)) >= _TOL
        if not active.any():
            break
        rows, s_now, w_now, p, g = rows[active], s_now[active], w_now[active], p[active], g[active]
        h = design.hessians(w_now * p * (1.0 - p), lambda_)
        step = np.linalg.solve(h, -g[..., None])[..., 0]
        # Backtracking per resample (Armijo); the allowance lets tiny last steps through. Only
        # the rows whose step is still too long are evaluated again.
        f_now = f[rows]
        slope = np.einsum("bi,bi->b", g, step)
        allowance = 1e-13 * (np.abs(f_now) + 1.0)
        t = np.ones(len(rows))
        trial = s_now + step
        f_trial = design.objective(trial, w_now, lambda_)
        for _ in range(30):
            long = np.flatnonzero(~(f_trial <= f_now + 1e-4 * t * slope + allowance))  # NaN too
            if not long.size:
                break
            t[long] *= 0.5
            trial[long] = s_now[long] + t[long, None] * step[long]
            f_trial[long] = design.objective(trial[long], w_now[long], lambda_)
        s[rows], f[rows] = trial, f_trial
    return s


MapChunks = Callable[[Callable[[FloatArray], FloatArray], list[FloatArray]], Iterable[FloatArray]]
"""``map``, or an executor's: how the chunks of resamples are refitted."""


def refit_distinct(
    design: Design,
    counts: FloatArray,
    start: FloatArray,
    lambda_: float,
    *,
    lanes: int = 1,
    map_chunks: MapChunks = map,
) -> FloatArray:
    """``refit_weighted`` of every row of ``counts``, in chunks (at least ``lanes``) through
    ``map_chunks``, each distinct row refitted once and copied to its repeats.

    A row's refit depends on that row alone, so a repeat's is the same bits. Few comparisons
    repeat a lot: a quick ranking's 1,000 resamples of its 4 comparisons hold at most 35
    distinct rows, and refitting only those cut its refits from 2.6 ms of CPU to 0.6.
    Rows are told apart by their bytes; where the possible rows far outnumber the pairs of
    resamples (a paper ranking's 100 comparisons), repeats are too rare to look for."""
    rows, m = counts.shape
    distinct, repeats = counts, None
    if rows > 1 and math.comb(2 * m - 1, m) < rows * rows:
        as_bytes = np.ascontiguousarray(counts).view(np.dtype((np.void, counts.itemsize * m)))
        _, first, repeats = np.unique(as_bytes[:, 0], return_index=True, return_inverse=True)
        distinct = counts[first]
    n, left = design.n, len(distinct)
    per_lane = max(LANE_ROWS, -(-left // max(1, lanes)))
    chunk = max(1, min(CHUNK_FLOATS // (n * n + m * n), per_lane))

    def refit(weights: FloatArray) -> FloatArray:
        return refit_weighted(design, weights, start, lambda_)

    if chunk >= left:  # one chunk: refitted here, not handed to another thread and back
        fitted = refit(distinct)
    else:
        fitted = np.vstack(
            list(map_chunks(refit, [distinct[i : i + chunk] for i in range(0, left, chunk)]))
        )
    return fitted if repeats is None else fitted[repeats.reshape(-1)]


def _on_leaderboard_scale(rows: FloatArray, full: FloatArray) -> FloatArray:
    """Each resample's scores on the leaderboard's own scale: centred on the resample's mean
    (the population is fixed, so its mean is a stable anchor) and divided by the full-data
    fit's spread, the divisor ``bradley_terry.zscore`` uses for the leaderboard.

    One divisor for every resample: z-scoring each resample by its own spread shrank the
    resamples in which an undefeated or winless candidate ran away, and so placed such a
    candidate's point score outside its own interval."""
    rows = np.where(np.isfinite(rows), rows, 0.0)
    return _divided(rows - rows.mean(axis=1, keepdims=True), full)


def _divided(centred: FloatArray, full: FloatArray) -> FloatArray:
    """Centred scores divided by the full-data fit's spread (when above 1e-6)."""
    full = np.where(np.isfinite(full), full, 0.0)
    spread = float((full - full.mean()).std())
    if spread > 1e-6:
        centred = centred / spread
    return np.where(np.isfinite(centred), centred, 0.0)


def bootstrap(
    candidate_ids: Sequence[str],
    outcomes: Sequence[Outcome],
    *,
    lambda_: float = 0.01,
    resamples: int = 1000,
    seed: int = 0,
    lanes: int = 1,
    map_chunks: MapChunks = map,
    weights: Sequence[float] | None = None,
    lengths: Mapping[str, int] | None = None,
    length_model: LengthModel = "additive",
    intervals: IntervalMethod = "percentile",
) -> Bootstrap:
    """Intervals of each candidate's z-scored Bradley-Terry score, and its top share.

    ``intervals``: ``"percentile"``, the resamples' 2.5th and 97.5th percentiles, or
    ``"likelihood"``, profile-likelihood intervals of the full-data fit (``likelihood_intervals``;
    up to ``PROFILE_MAX_N`` candidates, percentile beyond), both on the leaderboard's scale.

    The distinct resamples (``refit_distinct``) are refitted in chunks, at least ``lanes`` of
    them when each can have ``LANE_ROWS`` rows, through ``map_chunks`` (``map``: one after
    another; an executor's ``map``: side by side, and numpy's products and solves let go of the
    GIL). A row's refit never depends on the rows beside it, so the intervals are the same bits
    whatever the chunks; the chunks' memory in all stays within ``CHUNK_FLOATS`` per lane.

    ``weights`` (one per outcome) weigh the comparisons as the leaderboard's fit did: a
    resample's counts are multiplied by them. With ``lengths`` the leaderboard is the
    length-controlled fit (``style_control``), and each refit holds the length term at its
    full-data value, ``gamma_hat * x_k`` as a fixed offset: the refits stay the batched
    n-dimensional Newton, and the intervals are the scores' spread given the length effect
    (the coefficient's own uncertainty is its Wald interval, reported beside them). The
    mixture (``length_model="mixture"``) is held the same way: its share at the full-data
    posterior mean, through the weighted objective at that share (``length_mixture``); the
    intervals, made around that objective's minimiser, are moved by the distance from it to the
    leaderboard's point, the scores' posterior mean."""
    controlled = weights is not None or lengths is not None
    if controlled:
        arr = style_arrays(candidate_ids, outcomes, weights=weights, lengths=lengths)
        ids, a, b, y = arr.ids, arr.a, arr.b, arr.y
    else:
        ids, a, b, y = canonical_arrays(candidate_ids, outcomes)
    n, m = len(ids), len(a)
    length = None
    offset = None
    counted = arr.weights if controlled else None
    if controlled:
        full = controlled_fit(
            candidate_ids,
            outcomes,
            weights=weights,
            lengths=lengths,
            lambda_=lambda_,
            model=length_model,
        )
        length, offset = full.length, full.offset
        if full.targets is not None:
            y, counted = full.targets, full.weights
    used = resamples_within_ceiling(resamples, n, m) if n >= 2 and m else 0
    if used == 0:
        return Bootstrap(0, resamples, seed, {}, {}, {}, length)
    design = Design(n, a, b, y, offset)
    start = full.raw if controlled else fit_arrays(n, a, b, y, lambda_)
    if controlled and full.centre is not None:
        start = full.centre
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(m, np.full(m, 1.0 / m), size=used).astype(np.float64)
    if counted is not None:
        counts *= counted
    fitted = refit_distinct(design, counts, start, lambda_, lanes=lanes, map_chunks=map_chunks)
    z = _on_leaderboard_scale(fitted, start)
    point = _on_leaderboard_scale(start[np.newaxis, :], start)[0]
    shift = np.zeros(n)
    if controlled and full.centre is not None:
        shift = zscore(full.raw) - point
        z, point = z + shift, point + shift
    method: IntervalMethod = "percentile"
    if intervals == "likelihood" and n <= PROFILE_MAX_N:
        method = "likelihood"
        raw_low, raw_high = profile_intervals(
            n,
            a,
            b,
            y,
            start,
            lambda_=lambda_,
            weights=counted,
            offset=offset,
        )
        low, high = _divided(raw_low, start) + shift, _divided(raw_high, start) + shift
    else:  # only here: the profile's intervals would replace them (the percentiles took a
        # fifth of a quick run's bootstrap, and its first run's import of ``numpy.ma``)
        tail = 100 * (1 - LEVEL) / 2
        low, high = np.percentile(z, [tail, 100 - tail], axis=0)
    # Where a candidate has very few comparisons, all won or all lost, its resamples pile up on
    # one side of its point and the percentiles can miss it by a little: an interval is widened
    # to take in its own point rather than report a score it excludes.
    low, high = np.minimum(low, point), np.maximum(high, point)
    top = np.bincount(np.argmax(z, axis=1), minlength=n) / used
    return Bootstrap(
        resamples=used,
        requested=resamples,
        seed=seed,
        low={cid: float(v) for cid, v in zip(ids, low, strict=True)},
        high={cid: float(v) for cid, v in zip(ids, high, strict=True)},
        top_share={cid: float(v) for cid, v in zip(ids, top, strict=True)},
        length=length,
        method=method,
    )


def rank_intervals(
    low: Mapping[str, float], high: Mapping[str, float]
) -> dict[str, tuple[int, int]]:
    """Each candidate's best and worst rank consistent with the score intervals, as the public
    arenas publish them: best = 1 + the candidates whose lower bound beats this one's upper
    bound (the arena's "rank (upper bound)"), worst = the field less the candidates whose upper
    bound falls below this one's lower bound."""
    ids = list(low)
    return {
        cid: (
            1 + sum(low[other] > high[cid] for other in ids),
            len(ids) - sum(high[other] < low[cid] for other in ids),
        )
        for cid in ids
    }
