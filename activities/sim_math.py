"""TEMPORARY placeholder (helper-1 replaces this file with the real module)."""

from __future__ import annotations

import math
import random


def beta_for_accuracy(a: float) -> float:
    rng = random.Random(0)
    diffs = [abs(rng.gauss(0, 1) - rng.gauss(0, 1)) for _ in range(4000)]
    lo, hi = 0.0, 100.0
    for _ in range(60):
        mid = (lo + hi) / 2
        acc = sum(1 / (1 + math.exp(-mid * d)) for d in diffs) / len(diffs)
        lo, hi = (mid, hi) if acc < a else (lo, mid)
    return (lo + hi) / 2


def p_a_wins(q_a: float, q_b: float, beta: float) -> float:
    return 1 / (1 + math.exp(-beta * (q_a - q_b)))


def draw_quality(rng: random.Random) -> float:
    return rng.gauss(0.0, 1.0)


def mutation_gain(rng: random.Random) -> float:
    return abs(rng.gauss(0.3, 0.2))
