"""The tournament's ``report.html`` (and an Ask run's): one self-contained page, no script.

``render_report`` turns a ``ReportData`` into rows and renders ``templates/tournament.html``
(Jinja2, autoescape on, the shared base layout); ``report_data_from_run_dir`` rebuilds that data
from a run directory's artifacts (schemas in the tournament spec), so a report can be
re-rendered at any time. Model output is untrusted: every value is escaped by the template.

The row models read back from the files derive from the strict rows the workflow writes: the
same fields and types, with defaults so that a partial or older file still renders.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, ConfigDict

from activities.model_types import Usage
from activities.reports import render_page
from activities.run_file_crypto import read_run_text
from activities.sim_math import true_quality
from activities.tournament.report_svg import interval_chart, line_chart, score_ladder
from activities.tournament.report_trust import (
    fit_sentences,
    interval_text,
    judge_rows,
    judge_sentences,
    winner_line,
)
from workflows import phases as phase_names
from workflows.tournament import types as strict

__all__ = [
    "CandidateRow",
    "ComparisonRow",
    "ReportData",
    "ScoreRow",
    "render_report",
    "report_data_from_run_dir",
]

FINAL_PHASE = phase_names.FINAL_JUDGING
_LENIENT = ConfigDict(extra="ignore")


class CandidateRow(strict.CandidateRow):
    """One line of ``candidates.jsonl``; ``text`` may be stored apart (``text_ref``)."""

    model_config = _LENIENT

    generation: int = 0
    kind: strict.CandidateKind = "initial"
    status: strict.CandidateStatus = "generated"
    text: str = ""
    text_ref: str | None = None
    model: str = ""
    provider: str = ""
    usage: Usage = Usage()
    created_at: str = ""
    true_quality: float | None = None  # sim runs only: the hidden q from the text trailer


class ComparisonRow(strict.ComparisonRow):
    """One line of ``comparisons.jsonl``."""

    model_config = _LENIENT

    generation: int | None = None
    scheduled_a: str = ""
    scheduled_b: str = ""
    confidence: float | None = None
    critique_a: str = ""
    critique_b: str = ""
    model: str = ""
    provider: str = ""
    attempts: int = 1
    usage: Usage = Usage()


class ScoreRow(strict.ScoreRow):
    """One line of ``scores.jsonl``: a candidate's Bradley-Terry result in one phase."""

    model_config = _LENIENT

    generation: int | None = None
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
    # What the run was asked to do, from config.json and summary.json.
    task: str | None = None
    models: dict[str, str] = {}
    profile: str | None = None
    seed: int | None = None
    limits: dict[str, int | float] = {}
    # How far to trust the ranking: summary.json's judge and confidence objects, and the final
    # scores with their intervals.
    judge: dict[str, Any] = {}
    confidence: dict[str, Any] | None = None
    final_scores: list[dict[str, Any]] = []
    length_control: dict[str, Any] | None = None
    weighting: str | None = None


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


def _limits_text(limits: dict[str, int | float]) -> str:
    parts = [
        f"{name}={value:.2f}" if isinstance(value, float) else f"{name}={value}"
        for name, value in limits.items()
        if value is not None
    ]
    return ", ".join(parts) or "none"


def _facts(data: ReportData) -> list[tuple[str, str]]:
    facts = [("status", data.status), ("winner", data.winner_id or "–")]
    if data.models:
        facts.append(("models", ", ".join(f"{r}: {m}" for r, m in data.models.items())))
    facts += [
        ("profile", data.profile or "–"),
        ("seed", "–" if data.seed is None else str(data.seed)),
        ("limits", _limits_text(data.limits)),
        ("calls", str(data.calls)),
        ("tokens", str(data.tokens)),
        ("cost", "unknown" if data.usd is None else f"${data.usd:.4f}"),
    ]
    return facts


def _rank_range(best: int | None, worst: int | None) -> str:
    if best is None or worst is None:
        return "–"
    return str(best) if best == worst else f"{best}–{worst}"


def _leaderboard(
    data: ReportData, rows: list[ScoreRow], cands: dict[str, CandidateRow]
) -> list[dict[str, Any]]:
    shown = []
    intervals = {s.get("candidate_id"): s for s in data.final_scores}
    for r in rows:
        interval = intervals.get(r.candidate_id, {}) if r.phase == FINAL_PHASE else {}
        cand = cands.get(r.candidate_id)
        # The candidate's own generation; a score row's generation is that of its phase.
        gen = cand.generation if cand else ("–" if r.generation is None else r.generation)
        shown.append(
            {
                "id": r.candidate_id,
                "rank": r.rank,
                "winner": r.candidate_id == data.winner_id,
                "true_q": _fmt(cand.true_quality if cand else None),
                "generation": gen,
                "score": f"{r.score:+.3f}",
                "interval": interval_text(interval.get("score_low"), interval.get("score_high")),
                "rank_range": _rank_range(interval.get("rank_high"), interval.get("rank_low")),
                "wlt": f"{r.wins}/{r.losses}/{r.ties}",
                "comparisons": r.comparisons,
                "parent": (cand.parent_id if cand else None) or "",
            }
        )
    return shown


def _win_matrix(ids: list[str], comparisons: list[ComparisonRow]) -> list[dict[str, Any]]:
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
    rows = []
    for r in ids:
        cells: list[dict[str, Any]] = []
        for c in ids:
            n = games[r, c]
            if r == c or n == 0:
                cells.append({"col": c, "kind": "diag" if r == c else "unplayed"})
                continue
            share = (wins[r, c] + 0.5 * ties[r, c]) / n
            cells.append(
                {
                    "col": c,
                    "kind": None,
                    "games": n,
                    "wins": wins[r, c],
                    # A tie printed as a bare 0 read like a loss.
                    "label": str(wins[r, c])
                    if not ties[r, c]
                    else f"{wins[r, c]} ({ties[r, c]} tie{'s' if ties[r, c] > 1 else ''})",
                    "hue": f"{120 * share:.0f}",
                    "tip": f"{r} beat {c} {wins[r, c]} of {n} (ties {ties[r, c]})",
                }
            )
        rows.append({"id": r, "cells": cells})
    return rows


def _progress(
    data: ReportData, phases: dict[str, list[ScoreRow]]
) -> tuple[list[dict[str, Any]], Markup]:
    quality = {c.id: c.true_quality for c in data.candidates}
    labels: list[str] = []
    best_q: list[float | None] = []
    median_q: list[float | None] = []
    rows = []
    for phase, scored in phases.items():
        qs = [q for r in scored if (q := quality.get(r.candidate_id)) is not None]
        scores = [r.score for r in scored]
        labels.append(phase_names.label(phase))
        best_q.append(max(qs) if qs else None)
        median_q.append(statistics.median(qs) if qs else None)
        rows.append(
            {
                "phase": phase,
                "count": len(scored),
                "top": scored[0].candidate_id,
                "best": f"{max(scores):+.3f}",
                "median": f"{statistics.median(scores):+.3f}",
                "best_q": _fmt(best_q[-1]),
                "median_q": _fmt(median_q[-1]),
            }
        )
    # Scores are z-scored within each phase, so only the sim's hidden quality is comparable
    # across generations; without it a chart would draw noise.
    chart = ""
    if data.simulated:
        chart = line_chart(labels, {"best true q": best_q, "median true q": median_q}, y_label="q")
    return rows, Markup(chart)  # the SVG helper escapes every label itself


def render_report(data: ReportData) -> str:
    """The whole HTML page for one tournament run."""
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
    progress, chart = _progress(data, phases)
    texts = []
    for cid in ids:
        cand = cands.get(cid)
        text = (cand.text or f"(stored apart: {cand.text_ref})") if cand else ""
        texts.append({"id": cid, "text": text})
    ladder = score_ladder([(r.candidate_id, r.score) for r in board], highlight=data.winner_id)
    final = [s for s in data.final_scores if s.get("score_low") is not None]
    intervals = interval_chart(
        [(s["candidate_id"], s["score"], s["score_low"], s["score_high"]) for s in final],
        highlight=data.winner_id,
        ranks={
            s["candidate_id"]: _rank_range(s.get("rank_high"), s.get("rank_low"))
            for s in final
            if s.get("rank_high") is not None
        },
    )
    return render_page(
        "tournament.html",
        title=f"ponder tournament {data.run_id}" + (" (simulated)" if data.simulated else ""),
        heading=f"Tournament {data.run_id}",
        facts=_facts(data),
        fact_ids={"winner": "winner", "status": "status"},
        simulated=data.simulated,
        task=data.task,
        final_phase=final_phase,
        leaderboard=_leaderboard(data, board, cands),
        ladder=Markup(ladder),  # the SVG helper escapes every label itself
        has_intervals=bool(final),
        intervals=Markup(intervals),  # escaped by the SVG helper too
        winner_line=winner_line(data.confidence, data.final_scores),
        judge_rows=judge_rows(data.judge) if data.judge else [],
        judge_sentences=(judge_sentences(data.judge) if data.judge else [])
        + fit_sentences(data.length_control, data.weighting, data.judge),
        ids=ids,
        matrix=_win_matrix(ids, matrix_comparisons),
        progress=progress,
        chart=chart,
        final_answer=data.final_answer,
        texts=texts,
    )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = read_run_text(path).splitlines()
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
        # One call without a known price makes the total unknown: a sum of the rest would
        # pass for the cost.
        unknown = any(r.get("usd") is None or r.get("priced") is False for r in rows)
        usd = None if unknown else sum(r["usd"] for r in rows)
        return len(rows), sum(_tokens(r) for r in rows), usd
    calls = summary.get("calls", 0)
    usage = summary.get("usage") or {}
    if isinstance(calls, dict):
        calls = calls.get("used", calls.get("total", 0))
    usd = None if summary.get("usd_known") is False else usage.get("usd")
    return int(calls or 0), _tokens(usage), usd


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_run_text(path))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _models(summary: dict[str, Any]) -> dict[str, str]:
    models = summary.get("models") or {}
    default = models.get("default")
    by_role: dict[str, str] = {}
    for role in ("generate", "judge", "mutate"):
        if chosen := models.get(role) or default:
            by_role[role] = str(chosen)
    if models.get("finalize"):
        by_role["finalize"] = models["finalize"]
    judge = summary.get("judge")
    panel = judge.get("judges") if isinstance(judge, dict) else None
    if isinstance(panel, list) and len(panel) > 1:  # a panel run has no one judge model
        by_role["judge"] = "panel: " + ", ".join(str(j) for j in panel)
    return by_role


def _profile_text(summary: dict[str, Any]) -> str | None:
    profile = summary.get("profile")
    if not isinstance(profile, dict):
        return summary.get("profile_name")
    shape = ", ".join(f"{k}={profile[k]}" for k in ("n", "k", "t", "m") if k in profile)
    name = summary.get("profile_name") or "custom"
    return f"{name} ({shape})" if shape else name


def report_data_from_run_dir(run_dir: Path) -> ReportData:
    """Rebuild the report's data from ``summary.json``, ``config.json`` and the ``*.jsonl``."""
    summary = json.loads(read_run_text(run_dir / "summary.json"))
    config = _read_json(run_dir / "config.json")
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
        final_answer = read_run_text(answer_path)
    else:  # no artifacts/final.txt yet (e.g. a failed run): show the winner's text, if any
        final_answer = (winner.text or "") if winner else ""
    calls, tokens, usd = _usage_totals(run_dir, summary)
    budget = summary.get("budget") or config.get("budget") or {}
    seed = summary.get("seed", config.get("seed"))
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
        task=config.get("task"),
        models=_models(summary),
        profile=_profile_text(summary),
        seed=seed if isinstance(seed, int) else None,
        limits={k: v for k, v in budget.items() if v is not None},
        judge=summary.get("judge") if isinstance(summary.get("judge"), dict) else {},
        confidence=summary.get("confidence")
        if isinstance(summary.get("confidence"), dict)
        else None,
        final_scores=[s for s in summary.get("final_scores") or [] if isinstance(s, dict)],
        length_control=summary.get("length_control")
        if isinstance(summary.get("length_control"), dict)
        else None,
        weighting=summary.get("weighting") if isinstance(summary.get("weighting"), str) else None,
    )
