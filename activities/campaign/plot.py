"""The campaign report's cost-vs-score plot, laid out: axis ticks, markers, a legend.

Pure (no I/O, no Temporal): the template draws what this returns. Each variant gets its own
marker (a shape and a colour, in the legend with its mean score and cost), so two variants at
the same point are still two marks: points closer than a marker's width (a single shot and a
same-config single at the same cost and mean, say) are drawn apart on a small ring around
where they sit, and their tooltip says so. The Pareto frontier is a dark outline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Plot", "PlotPoint", "Tick", "nice_ticks", "pareto_plot"]

MARKER_R = 6.0
RING_R = 10.0  # how far apart coinciding points are drawn
LEGEND_ROW = 18
COLOURS = ("#2563eb", "#f59e0b", "#16a34a", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d")
SHAPES = ("circle", "square", "triangle", "diamond", "triangle-down")


@dataclass(frozen=True)
class Tick:
    pos: float  # SVG coordinate along its axis
    label: str


@dataclass(frozen=True)
class PlotPoint:
    variant: str
    mean: float
    cost: float
    pareto: bool
    x: float
    y: float
    shape: str
    colour: str
    path: str  # the marker's SVG path at (x, y)
    moved: bool  # drawn apart from a variant at the same place
    legend_path: str  # the same marker in the legend row
    legend_y: float


@dataclass(frozen=True)
class Plot:
    width: int
    height: int  # the plot area and the legend below it
    pad: int
    plot_height: int
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    points: list[PlotPoint]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values (steps of 1, 2, 2.5 or 5 times a power of ten) covering
    ``[lo, hi]``; an empty range is widened around its value first."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        half = abs(lo) * 0.1 or 0.5
        lo, hi = (lo - half, hi + half) if lo != 0 else (0.0, 1.0)
    raw = (hi - lo) / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def _label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if decimals and abs(round(step * 10**decimals) - step * 10**decimals) > 1e-9:
        decimals += 1  # a step of 2.5 x 10^k needs one more digit
    return f"{value:.{decimals}f}"


def _marker(shape: str, x: float, y: float, r: float = MARKER_R) -> str:
    if shape == "square":
        s = r * 0.9
        return f"M{x - s:.1f},{y - s:.1f}h{2 * s:.1f}v{2 * s:.1f}h{-2 * s:.1f}z"
    if shape == "triangle":
        return f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y + r * 0.8:.1f}L{x - r:.1f},{y + r * 0.8:.1f}z"
    if shape == "triangle-down":
        return f"M{x:.1f},{y + r:.1f}L{x + r:.1f},{y - r * 0.8:.1f}L{x - r:.1f},{y - r * 0.8:.1f}z"
    if shape == "diamond":
        return f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y:.1f}L{x:.1f},{y + r:.1f}L{x - r:.1f},{y:.1f}z"
    arc = f"a{r:.1f},{r:.1f} 0 1,0"  # a circle: two half arcs
    return f"M{x - r:.1f},{y:.1f}{arc} {2 * r:.1f},0{arc} {-2 * r:.1f},0"


def _scale(ticks: list[float], start: float, end: float) -> tuple[float, float, float]:
    lo, hi = ticks[0], ticks[-1]
    return lo, (end - start) / ((hi - lo) or 1.0), start


def pareto_plot(
    rows: Sequence[tuple[str, float, float, bool]],
    *,
    width: int = 520,
    height: int = 300,
    pad: int = 56,
) -> Plot:
    """``rows``: (variant, mean USD per cell, mean score, on the Pareto frontier), in the
    order the legend lists them."""
    costs, means = [r[1] for r in rows] or [0.0], [r[2] for r in rows] or [0.0]
    lo_cost = 0.0 if min(costs) >= 0 and max(costs) > 0 else min(costs)
    x_values = nice_ticks(lo_cost, max(costs))
    y_values = nice_ticks(min(means), max(means))
    x0, xk, xs = _scale(x_values, pad, width - pad / 2)
    y0, yk, ys = _scale(y_values, height - pad, pad / 2)
    step_x = x_values[1] - x_values[0] if len(x_values) > 1 else 1.0
    step_y = y_values[1] - y_values[0] if len(y_values) > 1 else 1.0
    x_ticks = [Tick(xs + (v - x0) * xk, _label(v, step_x)) for v in x_values]
    y_ticks = [Tick(ys + (v - y0) * yk, _label(v, step_y)) for v in y_values]
    placed = [(xs + (c - x0) * xk, ys + (m - y0) * yk) for _, c, m, _ in rows]
    # Points closer than a marker's width form a group; a group of k is drawn on a ring.
    groups: list[list[int]] = []
    for i, (x, y) in enumerate(placed):
        for group in groups:
            gx, gy = placed[group[0]]
            if math.hypot(x - gx, y - gy) < 2 * MARKER_R:
                group.append(i)
                break
        else:
            groups.append([i])
    drawn = list(placed)
    moved = [False] * len(rows)
    for group in (g for g in groups if len(g) > 1):
        cx, cy = placed[group[0]]
        for k, i in enumerate(group):
            angle = 2 * math.pi * k / len(group) - math.pi / 2
            drawn[i] = (cx + RING_R * math.cos(angle), cy + RING_R * math.sin(angle))
            moved[i] = True
    points = []
    for i, (variant, cost, mean, pareto) in enumerate(rows):
        shape, colour = SHAPES[i % len(SHAPES)], COLOURS[i % len(COLOURS)]
        x, y = drawn[i]
        legend_y = height + LEGEND_ROW * (i + 0.5)
        points.append(
            PlotPoint(
                variant=variant,
                mean=mean,
                cost=cost,
                pareto=pareto,
                x=round(x, 1),
                y=round(y, 1),
                shape=shape,
                colour=colour,
                path=_marker(shape, x, y),
                moved=moved[i],
                legend_path=_marker(shape, pad + MARKER_R, legend_y),
                legend_y=legend_y,
            )
        )
    return Plot(
        width=width,
        height=height + LEGEND_ROW * len(rows) + 8,
        pad=pad,
        plot_height=height,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        points=points,
    )
