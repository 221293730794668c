"""Inline SVG charts for the tournament report: pure string building, no dependencies.

Every label passes through ``html.escape`` here, so callers hand over raw ids and numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["interval_chart", "line_chart", "score_ladder"]

_PALETTE = ("#2563eb", "#d97706", "#059669", "#7c3aed")
_LABEL_GAP = 16  # px between label baselines, so close scores never print on top of each other


def score_ladder(points: Sequence[tuple[str, float]], *, highlight: str | None = None) -> str:
    """Candidates on a vertical axis by score (highest at the top), each with a label.

    A dot sits at its true height; its label may be pushed down to keep labels apart, and a
    leader line joins the two so the reader still sees where the candidate really is.
    """
    if not points:
        return '<svg class="score-ladder" width="0" height="0"></svg>'
    ordered = sorted(points, key=lambda p: (-p[1], p[0]))
    scores = [s for _, s in ordered]
    top, axis_x, label_x = 20, 70, 130
    span = max(160, _LABEL_GAP * len(ordered))
    hi, lo = max(scores), min(scores)

    def y_of(score: float) -> float:
        if hi - lo < 1e-12:
            return top + span / 2
        return top + (hi - score) / (hi - lo) * span

    parts: list[str] = []
    label_y = float("-inf")
    for cid, score in ordered:
        y = y_of(score)
        label_y = max(y, label_y + _LABEL_GAP)
        strong = cid == highlight
        color = "#b45309" if strong else "#2563eb"
        weight = ' font-weight="bold"' if strong else ""
        parts.append(
            f'<line x1="{axis_x}" y1="{y:.1f}" x2="{label_x - 6}" y2="{label_y:.1f}" '
            'stroke="#cbd5e1"/>'
            f'<circle cx="{axis_x}" cy="{y:.1f}" r="{6 if strong else 4}" fill="{color}">'
            f"<title>{escape(cid)}: {score:.3f}</title></circle>"
            f'<text x="{label_x}" y="{label_y + 4:.1f}" font-size="12"{weight}>'
            f"{escape(cid)} ({score:+.3f})</text>"
        )
    height = int(max(label_y, top + span) + 24)
    ticks = "".join(
        f'<text x="{axis_x - 10}" y="{y_of(v) + 4:.1f}" font-size="11" text-anchor="end" '
        f'fill="#64748b">{v:+.2f}</text>'
        for v in sorted({hi, lo} | ({0.0} if lo < 0 < hi else set()))
    )
    return (
        f'<svg class="score-ladder" xmlns="http://www.w3.org/2000/svg" width="420" '
        f'height="{height}" role="img" aria-label="score ladder">'
        f'<line x1="{axis_x}" y1="{top}" x2="{axis_x}" y2="{top + span}" stroke="#475569"/>'
        f"{ticks}{''.join(parts)}</svg>"
    )


def line_chart(
    x_labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *, y_label: str = ""
) -> str:
    """A small multi-series line chart; ``None`` values are skipped (the line breaks there)."""
    values = [v for ys in series.values() for v in ys if v is not None]
    if not x_labels or not values:
        return '<svg class="line-chart" width="0" height="0"></svg>'
    width, height, left, right, top, bottom = 560, 240, 56, 20, 16, 56
    hi, lo = max(values), min(values)
    if hi - lo < 1e-12:
        hi, lo = hi + 1, lo - 1
    step = (width - left - right) / max(1, len(x_labels) - 1)

    def x_of(i: int) -> float:
        return left + (i * step if len(x_labels) > 1 else (width - left - right) / 2)

    def y_of(v: float) -> float:
        return top + (hi - v) / (hi - lo) * (height - top - bottom)

    parts = [
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#475569"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
        'stroke="#475569"/>',
    ]
    for tick in (hi, lo):
        parts.append(
            f'<text x="{left - 6}" y="{y_of(tick) + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#64748b">{tick:.2f}</text>'
        )
    for i, label in enumerate(x_labels):
        parts.append(
            f'<text x="{x_of(i):.1f}" y="{height - bottom + 16}" font-size="11" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    for n, (name, ys) in enumerate(series.items()):
        color = _PALETTE[n % len(_PALETTE)]
        run: list[str] = []
        for i, v in enumerate([*ys, None]):
            if v is None:  # a gap or the end: draw the segment collected so far
                if len(run) > 1:
                    parts.append(
                        f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                        f'points="{" ".join(run)}"/>'
                    )
                run = []
                continue
            run.append(f"{x_of(i):.1f},{y_of(v):.1f}")
            parts.append(
                f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="3" fill="{color}">'
                f"<title>{escape(name)} {escape(x_labels[i])}: {v:.3f}</title></circle>"
            )
        parts.append(
            f'<rect x="{left + 150 * n}" y="{height - 22}" width="10" height="10" fill="{color}"/>'
            f'<text x="{left + 150 * n + 14}" y="{height - 13}" font-size="11">'
            f"{escape(name)}</text>"
        )
    if y_label:
        parts.append(
            f'<text x="12" y="{top + (height - top - bottom) / 2:.0f}" font-size="11" '
            f'transform="rotate(-90 12 {top + (height - top - bottom) / 2:.0f})" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
    return (
        f'<svg class="line-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="progress chart">{"".join(parts)}</svg>'
    )


def nice_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Round values (steps of 1, 2 or 5 times a power of ten) spanning ``[lo, hi]``, at most
    ``most`` of them."""
    span = max(hi - lo, 1e-9)
    step = 10 ** math.floor(math.log10(span / most))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= most:
            step *= factor
            break
    first = math.ceil(lo / step - 1e-9)
    count = math.floor(hi / step + 1e-9) - first + 1
    return [round((first + i) * step, 10) for i in range(count)]


def interval_chart(
    rows: Sequence[tuple[str, float, float, float]],
    *,
    highlight: str | None = None,
    ranks: Mapping[str, str] | None = None,
) -> str:
    """One line per candidate (best first): its 95% interval as a bar, its score as a dot, its
    rank range (``ranks``) at the right; a scale with gridlines and both axes titled."""
    if not rows:
        return '<svg class="score-intervals" width="0" height="0"></svg>'
    width, left, right, top, gap = 600, 100, 60, 16, 18
    lo = min(low for _, _, low, _ in rows)
    hi = max(high for _, _, _, high in rows)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1

    def x_of(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - right)

    height = top + len(rows) * gap + 40
    axis_y = height - 36
    parts = []
    for v in nice_ticks(lo, hi):
        x, label = x_of(v), f"{v:+g}" if v else "0"
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{axis_y}" '
            f'stroke="#e2e8f0"/><text class="tick" x="{x:.1f}" y="{axis_y + 14}" '
            f'font-size="11" text-anchor="middle" fill="#64748b">{label}</text>'
        )
    for i, (cid, score, low, high) in enumerate(rows):
        y = top + i * gap
        color = "#b45309" if cid == highlight else "#2563eb"
        rank = (ranks or {}).get(cid)
        rank_text = (
            f'<text class="rank-range" x="{width - right + 8}" y="{y + 4}" font-size="11" '
            f'fill="#475569">#{escape(rank)}</text>'
            if rank
            else ""
        )
        parts.append(
            f'<g class="score-interval" data-candidate-id="{escape(cid)}">'
            f'<text x="{left - 8}" y="{y + 4}" font-size="11" text-anchor="end">'
            f"{escape(cid)}</text>"
            f'<line x1="{x_of(low):.1f}" y1="{y}" x2="{x_of(high):.1f}" y2="{y}" '
            f'stroke="{color}" stroke-width="3"/>'
            f'<circle cx="{x_of(score):.1f}" cy="{y}" r="4" fill="{color}">'
            f"<title>{escape(cid)}: {score:+.3f} [{low:+.3f}, {high:+.3f}]</title></circle>"
            f"{rank_text}</g>"
        )
    middle = left + (width - left - right) / 2
    titles = (
        f'<text class="axis-title" x="{middle:.1f}" y="{height - 4}" font-size="11" '
        'text-anchor="middle" fill="#334155">Bradley-Terry score (leaderboard scale); bar: '
        "95% interval, dot: the score</text>"
        f'<text class="axis-title" x="12" y="{top + len(rows) * gap / 2:.1f}" font-size="11" '
        f'text-anchor="middle" fill="#334155" transform="rotate(-90 12 '
        f'{top + len(rows) * gap / 2:.1f})">candidate, best first</text>'
        + (
            f'<text class="axis-title" x="{width - right + 8}" y="{top - 4}" font-size="11" '
            'fill="#334155">rank</text>'
            if ranks
            else ""
        )
    )
    return (
        f'<svg class="score-intervals" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" role="img" aria-label="score intervals">'
        f'<line x1="{left}" y1="{axis_y}" x2="{width - right}" y2="{axis_y}" stroke="#475569"/>'
        f"{''.join(parts)}{titles}</svg>"
    )
