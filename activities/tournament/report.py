"""The tournament's ``report.html``: one self-contained page (inline CSS and SVG, no script).

Pure: ``render_report`` turns a ``ReportData`` into a string, and ``report_data_from_run_dir``
rebuilds that data from a run directory's artifacts (schemas in the tournament spec), so a
report can be re-rendered at any time. Every piece of text, including candidate and judge
output, goes through ``html.escape``: model output is untrusted.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from activities.providers.sim import true_quality
from activities.tournament.report_svg import line_chart, score_ladder
from workflows import phases as phase_names

__all__ = [
    "CandidateRow",
    "ComparisonRow",
    "ReportData",
    "ScoreRow",
    "render_report",
    "report_data_from_run_dir",
]

FINAL_PHASE = phase_names.FINAL_JUDGING


class CandidateRow(BaseModel):
    """One line of ``candidates.jsonl`` (fields the report uses; others are ignored)."""

    id: str
    generation: int = 0
    kind: str = "initial"
    parent_id: str | None = None
    status: str = "generated"
    discard_reason: str | None = None
    text: str | None = None
    text_ref: str | None = None
    model: str | None = None
    provider: str | None = None
    true_quality: float | None = None  # sim runs only: the hidden q from the text trailer


class ComparisonRow(BaseModel):
    """One line of ``comparisons.jsonl``."""

    id: str
    phase: str
    generation: int | None = None
    presented_a: str
    presented_b: str
    scheduled_a: str | None = None
    scheduled_b: str | None = None
    winner: Literal["A", "B", "tie"]
    confidence: float | None = None
    critique_a: str = ""
    critique_b: str = ""
    model: str | None = None
    provider: str | None = None
    attempts: int = 1


class ScoreRow(BaseModel):
    """One line of ``scores.jsonl``: a candidate's Bradley-Terry result in one phase."""

    phase: str
    generation: int | None = None
    candidate_id: str
    score: float
    rank: int
    tie_group: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    comparisons: int = 0


class ReportData(BaseModel):
    """Everything the report shows; ``scores`` holds every phase, the leaderboard the last."""

    run_id: str
    status: str
    winner_id: str | None = None
    simulated: bool = False
    calls: int = 0
    tokens: int = 0
    usd: float | None = None
    final_answer: str = ""
    candidates: list[CandidateRow] = []
    comparisons: list[ComparisonRow] = []
    scores: list[ScoreRow] = []


_phase_order = phase_names.order_key  # generation_judging:G in G order, then final_judging


def _phases(data: ReportData) -> dict[str, list[ScoreRow]]:
    by_phase: dict[str, list[ScoreRow]] = defaultdict(list)
    for row in data.scores:
        by_phase[row.phase].append(row)
    return {
        p: sorted(by_phase[p], key=lambda r: r.rank) for p in sorted(by_phase, key=_phase_order)
    }


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "–" if value is None else format(value, spec)


def _header(data: ReportData) -> str:
    badge = '<span class="badge sim">simulated</span>' if data.simulated else ""
    usd = "unknown" if data.usd is None else f"${data.usd:.4f}"
    return (
        f"<header><h1>Tournament {escape(data.run_id)} {badge}</h1><dl>"
        f'<dt>status</dt><dd class="status">{escape(data.status)}</dd>'
        f'<dt>winner</dt><dd id="winner">{escape(data.winner_id or "–")}</dd>'
        f"<dt>calls</dt><dd>{data.calls}</dd><dt>tokens</dt><dd>{data.tokens}</dd>"
        f"<dt>cost</dt><dd>{escape(usd)}</dd></dl></header>"
    )


def _leaderboard(data: ReportData, rows: list[ScoreRow], cands: dict[str, CandidateRow]) -> str:
    q_head = "<th>true q</th>" if data.simulated else ""
    head = (
        f"<tr><th>rank</th>{q_head}<th>candidate</th><th>generation</th><th>score</th>"
        "<th>W/L/T</th><th>comparisons</th><th>parent</th></tr>"
    )
    body = []
    for r in rows:
        cand = cands.get(r.candidate_id)
        q = cand.true_quality if cand else None
        q_cell = f'<td class="true-quality">{_fmt(q)}</td>' if data.simulated else ""
        cls = "leaderboard-row winner" if r.candidate_id == data.winner_id else "leaderboard-row"
        cid = escape(r.candidate_id)
        # The candidate's own generation; a score row's generation is that of its phase.
        gen = cand.generation if cand else ("–" if r.generation is None else r.generation)
        body.append(
            f'<tr class="{cls}" data-candidate-id="{cid}"><td class="rank">{r.rank}</td>{q_cell}'
            f'<td class="candidate">{cid}</td><td>{gen}</td><td class="score">{r.score:+.3f}</td>'
            f"<td>{r.wins}/{r.losses}/{r.ties}</td>"
            f"<td>{r.comparisons}</td><td>{escape((cand.parent_id if cand else None) or '')}</td>"
            "</tr>"
        )
    return f'<table id="leaderboard"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _win_matrix(ids: list[str], comparisons: list[ComparisonRow]) -> str:
    wins: dict[tuple[str, str], int] = defaultdict(int)
    games: dict[tuple[str, str], int] = defaultdict(int)
    ties: dict[tuple[str, str], int] = defaultdict(int)
    for cmp in comparisons:
        a, b = cmp.presented_a, cmp.presented_b
        games[a, b] += 1
        games[b, a] += 1
        if cmp.winner == "tie":
            ties[a, b] += 1
            ties[b, a] += 1
        else:
            wins[(a, b) if cmp.winner == "A" else (b, a)] += 1
    head = "".join(f'<th scope="col">{escape(i)}</th>' for i in ids)
    rows = []
    for r in ids:
        cells = []
        for c in ids:
            attrs = f'data-row="{escape(r)}" data-col="{escape(c)}"'
            n = games[r, c]
            if r == c or n == 0:
                kind = "diag" if r == c else "unplayed"
                cells.append(f'<td class="win-cell {kind}" {attrs}></td>')
                continue
            share = (wins[r, c] + 0.5 * ties[r, c]) / n
            tip = f"{r} beat {c} {wins[r, c]} of {n} (ties {ties[r, c]})"
            cells.append(
                f'<td class="win-cell" {attrs} data-games="{n}" title="{escape(tip)}" '
                f'style="background:hsl({120 * share:.0f},60%,82%)">{wins[r, c]}</td>'
            )
        rows.append(f'<tr><th scope="row">{escape(r)}</th>{"".join(cells)}</tr>')
    return (
        f'<table id="win-matrix"><thead><tr><th>row beat col</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _progress(data: ReportData, phases: dict[str, list[ScoreRow]]) -> str:
    quality = {c.id: c.true_quality for c in data.candidates}
    labels, best_q, median_q, rows = [], [], [], []
    for phase, scored in phases.items():
        qs = [q for r in scored if (q := quality.get(r.candidate_id)) is not None]
        scores = [r.score for r in scored]
        labels.append(phase_names.label(phase))
        best_q.append(max(qs) if qs else None)
        median_q.append(statistics.median(qs) if qs else None)
        q_cells = (
            f"<td>{_fmt(best_q[-1])}</td><td>{_fmt(median_q[-1])}</td>" if data.simulated else ""
        )
        rows.append(
            f'<tr class="progress-row" data-phase="{escape(phase)}"><td>{escape(phase)}</td>'
            f"<td>{len(scored)}</td><td>{escape(scored[0].candidate_id)}</td>"
            f"<td>{max(scores):+.3f}</td><td>{statistics.median(scores):+.3f}</td>{q_cells}</tr>"
        )
    q_head = "<th>best true q</th><th>median true q</th>" if data.simulated else ""
    table = (
        '<table id="progress"><thead><tr><th>phase</th><th>candidates</th><th>top</th>'
        f"<th>best score</th><th>median score</th>{q_head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    if not data.simulated:
        # Scores are z-scored within each phase, so only the sim's hidden quality is comparable
        # across generations; without it a chart would draw noise.
        return table + '<p class="note">Scores are z-scored within each phase.</p>'
    chart = line_chart(labels, {"best true q": best_q, "median true q": median_q}, y_label="q")
    return table + chart


def _candidate_texts(ids: list[str], cands: dict[str, CandidateRow]) -> str:
    parts = []
    for cid in ids:
        cand = cands.get(cid)
        text = (cand.text or f"(stored apart: {cand.text_ref})") if cand else ""
        parts.append(
            f"<details><summary>{escape(cid)}</summary>"
            f'<pre class="candidate-text">{escape(text)}</pre></details>'
        )
    return "".join(parts)


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem}
body{color:#0f172a}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #e2e8f0}
dl{display:grid;grid-template-columns:auto 1fr;gap:.2rem 1rem}dt{color:#64748b}dd{margin:0}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #e2e8f0;padding:.25rem .5rem;text-align:right}
th{background:#f8fafc}tr.winner td{font-weight:600;background:#fef3c7}
td.candidate,th[scope=row]{text-align:left;font-family:ui-monospace,monospace}
.win-cell{text-align:center;min-width:2.2rem}.win-cell.diag{background:#e2e8f0}
.badge{font-size:.75rem;padding:.1rem .5rem;border-radius:1rem;vertical-align:middle}
.sim{background:#ede9fe;color:#5b21b6}.note{color:#64748b}
pre{white-space:pre-wrap;background:#f8fafc;border:1px solid #e2e8f0;padding:1rem;overflow-x:auto}
"""


def render_report(data: ReportData) -> str:
    """The whole HTML page for one run."""
    cands = {c.id: c for c in data.candidates}
    phases = _phases(data)
    final_phase = next(reversed(phases), None)
    board = phases.get(final_phase, []) if final_phase else []
    ids = [r.candidate_id for r in board]
    shown = set(ids)
    # Same phase as the leaderboard, so each matrix row sums to that row's W (and T) there.
    matrix_comparisons = [
        c
        for c in data.comparisons
        if c.phase == final_phase and c.presented_a in shown and c.presented_b in shown
    ]
    title = f"ponder tournament {data.run_id}" + (" (simulated)" if data.simulated else "")
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"{_header(data)}"
        f"<h2>Leaderboard ({escape(final_phase or 'no scores')})</h2>"
        f"{_leaderboard(data, board, cands)}"
        f"<h2>Score ladder</h2>"
        f"{score_ladder([(r.candidate_id, r.score) for r in board], highlight=data.winner_id)}"
        f"<h2>Win matrix</h2>{_win_matrix(ids, matrix_comparisons)}"
        f"<h2>Progress per generation</h2>{_progress(data, phases)}"
        f'<h2>Final answer</h2><pre id="final-answer">{escape(data.final_answer)}</pre>'
        f"<h2>Candidates</h2>{_candidate_texts(ids, cands)}</body></html>\n"
    )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _tokens(usage: dict[str, Any]) -> int:
    total = usage.get("total_tokens")
    return int(
        total
        if total is not None
        else (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
    )


def _usage_totals(run_dir: Path, summary: dict[str, Any]) -> tuple[int, int, float | None]:
    # usage.jsonl has one row per billed call and a fixed schema, so prefer it to the summary.
    rows = _read_jsonl(run_dir / "usage.jsonl")
    if rows:
        usd = [r["usd"] for r in rows if r.get("usd") is not None]
        return len(rows), sum(_tokens(r) for r in rows), (sum(usd) if usd else None)
    calls = summary.get("calls", 0)
    usage = summary.get("usage") or {}
    if isinstance(calls, dict):
        calls = calls.get("used", calls.get("total", 0))
    return int(calls or 0), _tokens(usage), usage.get("usd")


def report_data_from_run_dir(run_dir: Path) -> ReportData:
    """Rebuild the report's data from ``summary.json`` and the ``*.jsonl`` artifacts."""
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    simulated = bool(summary.get("simulated", False))
    candidates = [CandidateRow.model_validate(r) for r in _read_jsonl(run_dir / "candidates.jsonl")]
    if simulated:
        for cand in candidates:
            if cand.true_quality is None:
                cand.true_quality = true_quality(cand.text or "")
    answer_path = run_dir / (summary.get("final_answer_path") or "artifacts/final.txt")
    by_id = {c.id: c for c in candidates}
    winner = by_id.get(summary.get("winner_id") or "")
    if answer_path.is_file():
        final_answer = answer_path.read_text(encoding="utf-8")
    else:  # no artifacts/final.txt yet (e.g. a failed run): show the winner's text, if any
        final_answer = (winner.text or "") if winner else ""
    calls, tokens, usd = _usage_totals(run_dir, summary)
    return ReportData(
        run_id=summary["run_id"],
        status=summary.get("status", "unknown"),
        winner_id=summary.get("winner_id"),
        simulated=simulated,
        calls=calls,
        tokens=tokens,
        usd=usd,
        final_answer=final_answer,
        candidates=candidates,
        comparisons=[
            ComparisonRow.model_validate(r) for r in _read_jsonl(run_dir / "comparisons.jsonl")
        ],
        scores=[ScoreRow.model_validate(r) for r in _read_jsonl(run_dir / "scores.jsonl")],
    )
