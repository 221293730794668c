"""Write a tournament's run directory from a workflow snapshot, atomically file by file.

Called after every phase, so the directory always shows the latest committed phase. The row
files (``GROWING_FILES``) arrive as the rows after the lines an earlier write left
(``after_lines``) and are appended (the run store's ``FileAppend``, which cuts back to those
lines first, so a retry writes the same bytes); the files that sum the run up are rewritten
from the rows on disk. ``report.html`` is rendered once, when the run ends (``ponder report``
re-renders it on request). An incremental write leaves the settled files (``settled``) that are
there already (a quick run's five writes rewrote ``config.json`` five times). Timestamps come
from the snapshot (``workflow.now()``), so a re-executed activity writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities.raw_events import redact
from activities.run_file_crypto import read_run_bytes
from activities.run_files import in_run_store
from activities.run_store import FileAppend, FilesGap, RunStore, check_writer
from activities.sim_math import true_quality
from activities.tournament.report import render_report, report_data_from_run_dir
from activities.tournament.write_order import WriteKey, in_order
from workflows.families import model_family
from workflows.progress_file import PROGRESS_FILE, progress_json
from workflows.tournament.activity_contracts import WRITE_TOURNAMENT_ARTIFACTS
from workflows.tournament.bootstrap import LEVEL, rank_intervals
from workflows.tournament.judge_stats import confidence_vs_correctness, judge_summary
from workflows.tournament.preflight import self_preference_risks
from workflows.tournament.progress import ENDED
from workflows.tournament.schedule import FINAL_JUDGING_PHASE
from workflows.tournament.types import (
    GROWING_FILES,
    CandidateRow,
    ComparisonRow,
    Event,
    ScoreRow,
    TournamentSnapshot,
    UsageRow,
)

__all__ = [
    "WRITE_TOURNAMENT_ARTIFACTS",
    "TournamentArtifactActivities",
    "redact_config",
    "render_files",
    "stacked",
]

_ROW_TYPES: dict[str, type[BaseModel]] = {
    "candidates": CandidateRow,
    "comparisons": ComparisonRow,
    "scores": ScoreRow,
    "usage": UsageRow,
    "events": Event,
}


def redact_config(value: Any) -> Any:
    """Secret-looking keys redacted; numeric budget keys such as ``max_input_tokens`` kept."""
    return redact(value)


def _line(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def _jsonl(rows: list[Any]) -> str:
    return "".join(_line(row.model_dump(mode="json")) + "\n" for row in rows)


def _judge(snap: TournamentSnapshot) -> dict[str, Any]:
    """How far to trust the verdicts: position bias, flips, panel agreement, family flags."""
    families = {
        c.id: model_family(f"{c.provider}:{c.model}") for c in snap.candidates if c.model != "given"
    }
    judge = judge_summary(
        snap.comparisons,
        both_orders=snap.input.judge_orders == "both",
        panel=snap.input.judge_panel,
        families=families,
        lengths={c.id: len(c.text) for c in snap.candidates},
    )
    risks = self_preference_risks(snap.input, snap.profile) if snap.profile else []
    judge["self_preference_risk"] = [
        {"judge": r.judge, "family": r.family, "generators": list(r.generators), "note": r.message}
        for r in risks
    ]
    return judge


def _final_scores(snap: TournamentSnapshot, final: list[ScoreRow]) -> list[dict[str, Any]]:
    rows = [s.model_dump(mode="json") for s in final]
    intervals = snap.intervals
    if intervals and intervals.resamples:
        ranks = rank_intervals(intervals.low, intervals.high)
        for row in rows:
            cid = row["candidate_id"]
            best, worst = ranks.get(cid, (None, None))
            row |= {
                "score_low": intervals.low.get(cid),
                "score_high": intervals.high.get(cid),
                "top_share": intervals.top_share.get(cid),
                "rank_high": best,
                "rank_low": worst,
            }
    return rows


def _confidence(snap: TournamentSnapshot, final: list[ScoreRow]) -> dict[str, Any] | None:
    """The bootstrap behind the intervals, and whether the winner's clears the runner-up's."""
    intervals = snap.intervals
    if intervals is None or not intervals.requested:  # none asked (length control's call)
        return None
    out: dict[str, Any] = {
        "method": "profile likelihood (Bradley-Terry, chi-square 95%; exact at a separated record)"
        if intervals.method == "likelihood"
        else "bootstrap percentile (comparisons resampled, Bradley-Terry refitted)",
        "level": LEVEL,
        "resamples": intervals.resamples,
        "requested": intervals.requested,
        "seed": intervals.seed,
    }
    if snap.input.schedule == "adaptive" and intervals.method == "likelihood":
        # The likelihood does not depend on how the pairs were picked, but the default budget
        # judges so few pairs that the intervals are wide: 95% intervals covered the true
        # quality 99.5% of the time on the sim.
        out |= {
            "intervals_valid": False,
            "note": "the adaptive schedule judged few pairs, picked from earlier verdicts: the "
            "intervals are too wide to be read as 95% (they cover more often); read them as a "
            "rough guide, or run a regular schedule (k-regular) for intervals you can rely on",
        }
    elif snap.input.schedule == "adaptive":
        # Adaptive pairs are chosen from earlier verdicts; resampling the comparisons as if
        # they had been drawn independently understates the spread (95% intervals covered the
        # true quality about 73% of the time on the sim, against 89-91% for regular schedules).
        out |= {
            "intervals_valid": False,
            "note": "the adaptive schedule picked pairs from earlier verdicts, which this "
            "bootstrap does not account for: the intervals are too narrow; read them as a "
            "rough guide, or run a regular schedule (k-regular) for intervals you can rely on",
        }
    else:
        out["intervals_valid"] = True
    if intervals.resamples and len(final) >= 2:
        winner, runner_up = final[0].candidate_id, final[1].candidate_id
        out |= {
            "winner_id": winner,
            "runner_up_id": runner_up,
            # The winner's interval clears every other candidate's: its worst rank is 1.
            "winner_separated": rank_intervals(intervals.low, intervals.high)[winner][1] == 1,
            "winner_top_share": intervals.top_share.get(winner),
        }
    return out


def _length_control(snap: TournamentSnapshot) -> dict[str, Any] | None:
    """The final fit's length coefficient (``--length-control``), or None."""
    if not snap.input.length_control:
        return None
    term = snap.intervals.length_control if snap.intervals else None
    if term is None:
        return {"enabled": True, "coefficient": None}
    if term.model == "mixture":
        return {
            "enabled": True,
            **term.model_dump(),
            "level": LEVEL,
            "method": "Bradley-Terry mixed with a length pick: between different lengths, "
            "P(the longer wins) = coefficient + (1 - coefficient) * sigmoid(s_longer - "
            "s_shorter); coefficient and scores are posterior means, the scores integrated "
            "out by Laplace's approximation; interval: the posterior's central 95%",
        }
    return {
        "enabled": True,
        **term.model_dump(),
        "level": LEVEL,
        "method": "Bradley-Terry with a length term, P(A wins) = sigmoid(s_A - s_B + "
        "coefficient * x), x = +1 when A is the longer, -1 when B is, 0 for equal lengths; "
        "Wald interval",
        "odds_ratio": math.exp(term.coefficient),
    }


def _summary(snap: TournamentSnapshot) -> dict[str, Any]:
    texts = {c.id: c.text for c in snap.candidates}
    final_scores = [s for s in snap.scores if s.phase == FINAL_JUDGING_PHASE]
    summary: dict[str, Any] = {
        "run_id": snap.run_id,
        "status": snap.status,
        "winner_id": snap.winner_id,
        "final_answer_path": "artifacts/final.txt" if snap.final_answer is not None else None,
        "winner_path": "artifacts/winner.txt" if snap.winner_id else None,
        "profile": snap.profile.model_dump(mode="json", by_alias=True) if snap.profile else None,
        "profile_name": snap.profile_name,
        "seed": snap.seed,
        "models": snap.input.models.model_dump() | {"default": snap.input.model},
        "calls": {
            "used": snap.spent.calls,
            "failed": snap.spent.failed_calls,
            "limit": snap.budget.max_calls,
        },
        "usage": snap.spent.model_dump(),
        "usd_known": all(row.priced for row in snap.usage),  # false: usage.usd is not the cost
        "budget": snap.budget.model_dump(),
        "final_scores": _final_scores(snap, final_scores),
        "confidence": _confidence(snap, final_scores),
        "judge": _judge(snap),
        "length_control": _length_control(snap),
        "weighting": "confidence" if snap.input.weight_by_confidence else "none",
        "final_answer_is_postprocessed": snap.final_answer_is_postprocessed,
        "error": snap.error,
        "completed_at": snap.written_at if snap.status == "completed" else None,
    }
    simulated = bool(snap.candidates) and all(c.simulated for c in snap.candidates)
    if simulated:
        qualities = {cid: true_quality(text) for cid, text in texts.items()}
        known = {cid: q for cid, q in qualities.items() if q is not None}
        best = max(known, key=lambda cid: known[cid]) if known else None
        summary["judge"]["confidence_vs_correctness"] = confidence_vs_correctness(
            snap.comparisons, known
        )
        summary |= {
            "simulated": True,
            "winner_true_quality": known.get(snap.winner_id or ""),
            "best_candidate_id": best,
            "best_true_quality": known.get(best) if best else None,
        }
    return summary


def render_rows(snap: TournamentSnapshot) -> dict[str, str]:
    """The snapshot's rows as lines of their files (``GROWING_FILES``), path -> text."""
    candidates = []
    for c in snap.candidates:
        row = c.model_dump(mode="json")
        row["text_sha256"] = hashlib.sha256(c.text.encode()).hexdigest()
        candidates.append(_line(row) + "\n")
    return {
        "events.jsonl": _jsonl(snap.events),
        "candidates.jsonl": "".join(candidates),
        "comparisons.jsonl": _jsonl(snap.comparisons),
        "scores.jsonl": _jsonl(snap.scores),
        "usage.jsonl": _jsonl(snap.usage),
    }


def render_sums(snap: TournamentSnapshot) -> dict[str, str]:
    """Every artifact but the row files and the report, from a whole snapshot."""
    config = redact_config(
        snap.input.model_dump(mode="json", by_alias=True)
        | {
            "seed": snap.seed,
            "profile": snap.profile and snap.profile.model_dump(mode="json", by_alias=True),
        }
    )
    files = {
        "config.json": json.dumps(config, indent=2, sort_keys=True) + "\n",
        "summary.json": json.dumps(_summary(snap), indent=2, sort_keys=True) + "\n",
    }
    for generation, ids in snap.populations.items():
        files[f"population-{generation}.json"] = json.dumps(ids, indent=2) + "\n"
    texts = {c.id: c.text for c in snap.candidates}
    if snap.winner_id:
        files["artifacts/winner.txt"] = texts[snap.winner_id]
    if snap.final_answer is not None:
        files["artifacts/final.txt"] = snap.final_answer
    if snap.progress is not None:  # `ponder status` of an ended run reads it (status_cli)
        files[PROGRESS_FILE] = progress_json(
            "tournament",
            snap.progress.model_dump(mode="json"),
            started_at=snap.started_at,
            written_at=snap.written_at,
        )
    for sha, prompt in snap.prompts.items():  # include_prompts: usage rows name the sha
        files[f"prompts/{sha}.json"] = json.dumps(prompt, indent=2, ensure_ascii=False) + "\n"
    return files


def settled(relative: str) -> bool:
    """Whether a file's content never changes once a run has written it: ``config.json`` (the
    input, seed and profile) and each committed ``population-<g>.json``."""
    return relative == "config.json" or (
        relative.startswith("population-") and relative.endswith(".json")
    )


def render_files(snap: TournamentSnapshot) -> dict[str, str]:
    """Every artifact but the report, from a whole snapshot, as relative path -> content."""
    return render_rows(snap) | render_sums(snap)


def whole(snap: TournamentSnapshot, run_dir: Path) -> TournamentSnapshot:
    """``snap`` with the rows its files held before it (``after_lines``) read back in front."""
    update: dict[str, Any] = {}
    for field, name in GROWING_FILES.items():
        before = snap.after_lines.get(name, 0)
        if before:
            model = _ROW_TYPES[field]
            lines = read_run_bytes(run_dir / name).splitlines()[:before]
            update[field] = [model.model_validate_json(line) for line in lines]
            update[field] += getattr(snap, field)
    return snap.model_copy(update=update | {"after_lines": {}})


def stacked(writes: list[TournamentSnapshot]) -> TournamentSnapshot:
    """The whole snapshot that ``writes``, sent in order, add up to (each list cut back to the
    lines its write names, then extended): what the run directory holds after the last."""
    rows: dict[str, list[Any]] = {field: [] for field in GROWING_FILES}
    for snap in writes:
        for field, name in GROWING_FILES.items():
            kept = snap.after_lines.get(name, 0)
            if kept > len(rows[field]):
                raise FilesGap(f"{name}: a write names {kept} lines, {len(rows[field])} sent")
            rows[field] = rows[field][:kept] + getattr(snap, field)
    return writes[-1].model_copy(update=rows | {"after_lines": {}})


class TournamentArtifactActivities:
    def __init__(self, store: RunStore) -> None:
        self.store = store

    @activity.defn(name=WRITE_TOURNAMENT_ARTIFACTS)
    async def write_tournament_artifacts(self, snap: TournamentSnapshot) -> str:
        return await in_run_store(self._write, snap)

    def _write(self, snap: TournamentSnapshot) -> str:
        check_writer(snap.run_id, self.store, snap.chain)
        run_dir = self.store.writable_dir(snap.run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        key = None if snap.write_seq is None else WriteKey(snap.written_at, snap.write_seq)
        with in_order(run_dir, key) as current:
            if not current:  # an attempt that outlived its write: a later one has landed
                activity.logger.warning(
                    "artifact write %s of run %s is older than the one on disk: not written",
                    snap.write_seq,
                    snap.run_id,
                )
                return str(run_dir)
            self._write_files(snap, run_dir)
        return str(run_dir)

    def _write_files(self, snap: TournamentSnapshot, run_dir: Path) -> None:
        rows = render_rows(snap)
        after = {name: n for name, n in snap.after_lines.items() if n and name in rows}
        appends = {
            name: FileAppend(after_lines=n, text=rows.pop(name)) for name, n in after.items()
        }
        self.store.write_all(snap.run_id, rows, appends)
        sums = render_sums(whole(snap, run_dir) if after else snap)
        if after:  # an incremental write: the ones before it landed, their settled files too
            sums = {
                relative: text
                for relative, text in sums.items()
                if not (settled(relative) and (run_dir / relative).exists())
            }
        self.store.write_all(snap.run_id, sums)
        if snap.status in ENDED:  # the run writes no more: the report is rendered now
            self.store.write(
                snap.run_id, "report.html", render_report(report_data_from_run_dir(run_dir))
            )
