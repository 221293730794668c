"""The simulated provider's maths, shared by the sim provider and the benchmarks.

A candidate has a hidden quality ``q ~ N(0, 1)``; the judge picks A with probability
``sigmoid(beta * (qA - qB))``; "judge accuracy a" is the beta at which the mean probability of
picking the better of two random candidates is ``a``; a mutant gains ``|N(0.3, 0.2)|``.
A simulated answer ends in a trailer, ``[sim q=<quality> id=<candidate>( family=<name>)]``, that
the judge reads back; its parsing lives here too, so a report or a campaign scorer reads the
hidden quality without importing the provider. Pure Python (``math``, ``random``, ``re``) so it
runs anywhere.
"""

from __future__ import annotations

import functools
import math
import random
import re
import threading

__all__ = [
    "TRAILER",
    "beta_for_accuracy",
    "candidate_lengths",
    "draw_quality",
    "is_calibrated",
    "mean_accuracy",
    "mutation_gain",
    "p_a_wins",
    "parse_trailers",
    "sigmoid",
    "trailer_families",
    "true_quality",
]

TRAILER = re.compile(r"\[sim q=(-?\d+(?:\.\d+)?) id=([^\]\s]*)(?: family=([a-z0-9_-]+))?\]")


_HEADING = "Simulated "


def candidate_lengths(text: str) -> list[int]:
    """The length of each simulated candidate in ``text`` (a judge's prompt), in order: from its
    heading ("Simulated ...") to the end of its trailer, as ``len`` of the candidate's text."""
    lengths, previous_end = [], 0
    for match in TRAILER.finditer(text):
        start = text.rfind(_HEADING, previous_end, match.start())
        lengths.append(match.end() - (start if start >= 0 else previous_end))
        previous_end = match.end()
    return lengths


def parse_trailers(text: str) -> list[tuple[float, str]]:
    """The ``(q, id)`` of every sim trailer in ``text``, in order."""
    return [(float(q), cid) for q, cid, _family in TRAILER.findall(text)]


def trailer_families(text: str) -> list[str | None]:
    """The ``family=`` of every sim trailer in ``text`` (None where it names none), in order."""
    return [family or None for _q, _cid, family in TRAILER.findall(text)]


def true_quality(text: str) -> float | None:
    """The hidden quality of a simulated candidate: its last trailer's ``q``."""
    trailers = parse_trailers(text)
    return trailers[-1][0] if trailers else None


# Simpson's rule over the density of |qA - qB| (half-normal, sd sqrt(2)) on [0, 12 sd]: the
# integrand is smooth there, so 2,000 intervals are exact to ~1e-13.
_UPPER = 12.0 * math.sqrt(2.0)
_INTERVALS = 2000


def sigmoid(x: float) -> float:
    """Logistic function without overflow for any finite ``x``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def p_a_wins(q_a: float, q_b: float, beta: float) -> float:
    """P(the judge picks A) = sigmoid(beta * (qA - qB))."""
    return sigmoid(beta * (q_a - q_b))


@functools.cache
def _grid() -> tuple[tuple[float, ...], tuple[float, ...]]:
    h = _UPPER / _INTERVALS
    xs, ws = [], []
    for i in range(_INTERVALS + 1):
        x = i * h
        simpson = 1 if i in (0, _INTERVALS) else 4 if i % 2 else 2
        # Half-normal density of |D|, D ~ N(0, 2): 2 * exp(-x^2 / 4) / sqrt(4 pi).
        density = math.exp(-x * x / 4.0) / math.sqrt(math.pi)
        xs.append(x)
        ws.append(simpson * h / 3.0 * density)
    return tuple(xs), tuple(ws)


def mean_accuracy(beta: float) -> float:
    """E[sigmoid(beta * |qA - qB|)] for qA, qB ~ N(0, 1) independent."""
    xs, ws = _grid()
    return math.fsum(w * sigmoid(beta * x) for x, w in zip(xs, ws, strict=True))


BETAS_REMEMBERED = 256
"""Judge accuracies whose calibration one process remembers (the oldest is forgotten first)."""
_betas: dict[float, float] = {}
_betas_lock = threading.Lock()


def beta_for_accuracy(accuracy: float) -> float:
    """The beta whose mean accuracy is ``accuracy`` (0.5 <= accuracy < 1), by bisection (about
    40 ms), remembered for the last ``BETAS_REMEMBERED`` accuracies."""
    beta = _betas.get(accuracy)
    if beta is None:
        beta = _calibrate(accuracy)
        with _betas_lock:
            _betas[accuracy] = beta
            while len(_betas) > BETAS_REMEMBERED:
                del _betas[next(iter(_betas))]
    return beta


def is_calibrated(accuracy: float) -> bool:
    """Whether ``beta_for_accuracy(accuracy)`` answers from memory, with no bisection."""
    return accuracy in _betas


def _calibrate(accuracy: float) -> float:
    if not 0.5 <= accuracy < 1.0:
        raise ValueError(f"judge accuracy must be in [0.5, 1) (got {accuracy})")
    if accuracy == 0.5:
        return 0.0
    lo, hi = 0.0, 1.0
    while mean_accuracy(hi) < accuracy:
        lo, hi = hi, hi * 2.0
        if hi > 1e9:
            raise ValueError(f"judge accuracy {accuracy} is too close to 1 to simulate")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if mean_accuracy(mid) < accuracy:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def draw_quality(rng: random.Random) -> float:
    """A new candidate's hidden quality, N(0, 1)."""
    return rng.gauss(0.0, 1.0)


def mutation_gain(rng: random.Random) -> float:
    """What a mutation adds to its parent's quality: |N(0.3, 0.2)|."""
    return abs(rng.gauss(0.3, 0.2))
