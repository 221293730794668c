"""Length control and confidence weights end to end: a sim run whose judge prefers the longer
answer, fitted with ``length_control`` and ``weight_by_confidence``; its leaderboard, length
share and intervals checked against a refit from its own files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from temporalio.client import Client

from activities.config import Settings
from activities.sim_math import true_quality
from tests.tournament.helpers import read_jsonl, run
from workflows.tournament.judge_parse import Outcome
from workflows.tournament.profiles import Profile
from workflows.tournament.style_control import ControlledFit, controlled_fit
from workflows.tournament.types import RoleModels


def _refit(ids: list[str], rows: list[dict], lengths: dict[str, int]) -> ControlledFit:
    """The length-controlled fit of the final round, refitted from the files: the judge's
    mixture (``length_mixture``, its maths checked against scipy in ``test_length_mixture``),
    weights 1 + 2*confidence."""
    outcomes = [Outcome(r["presented_a"], r["presented_b"], r["winner"]) for r in rows]
    weights = [1 + 2 * r["confidence"] for r in rows]
    return controlled_fit(
        ids, outcomes, weights=weights, lengths=lengths, lambda_=0.01, model="mixture"
    )


async def test_a_length_controlled_confidence_weighted_run(
    client: Client, queue: str, settings: Settings
) -> None:
    result = await run(
        client,
        queue,
        custom=Profile(n=10, k=2, t=0, m=8),
        seed=4,
        models=RoleModels(
            generate="sim:default,chars=100-1500", judge="sim:default,length_bias=0.5"
        ),
        length_control=True,
        weight_by_confidence=True,
        bootstrap_resamples=300,
    )
    run_dir = Path(result.run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    candidates = {c["id"]: c for c in read_jsonl(run_dir / "candidates.jsonl")}
    lengths = {cid: len(c["text"]) for cid, c in candidates.items()}
    assert len(set(lengths.values())) > 5  # the writer's answers vary in length
    rows = [r for r in read_jsonl(run_dir / "comparisons.jsonl") if r["phase"] == "final_judging"]
    ids = sorted(candidates)
    fitted = _refit(ids, rows, lengths)
    assert fitted.length is not None
    scores = np.array([fitted.scores[c] for c in ids])

    term = summary["length_control"]
    assert term["enabled"] is True and term["model"] == "mixture"
    assert term["coefficient"] == pytest.approx(fitted.length.coefficient, abs=1e-9)
    assert term["low"] <= term["coefficient"] <= term["high"]
    # The judge picks the longer answer half the time: a share it cannot miss.
    assert term["low"] > 0 and term["significant"] is True and term["identified"] is True
    assert summary["weighting"] == "confidence"
    final = summary["final_scores"]
    assert {r["candidate_id"]: r["score"] for r in final} == pytest.approx(
        dict(zip(ids, scores.tolist(), strict=True)), abs=1e-5
    )
    # The leaderboard follows the controlled scores, and every one lies in its interval.
    assert [r["candidate_id"] for r in final] == sorted(ids, key=lambda c: -scores[ids.index(c)])
    for row in final:
        assert row["score_low"] <= row["score"] <= row["score_high"]
        assert 1 <= row["rank_high"] <= row["rank_low"] <= len(ids)
    # Its judge's verdicts are half length picks, so confidence (read from the qualities)
    # tracks them loosely; the figure is there and counts every decisive verdict.
    agree = summary["judge"]["confidence_vs_correctness"]
    quality = {cid: true_quality(c["text"]) for cid, c in candidates.items()}
    decisive = [
        r
        for r in read_jsonl(run_dir / "comparisons.jsonl")
        if r["winner"] != "tie" and quality[r["presented_a"]] != quality[r["presented_b"]]
    ]
    assert agree["verdicts"] == len(decisive)
    right = [r["confidence"] for r in decisive if _right(r, quality)]
    assert agree["correct"]["count"] == len(right)
    assert agree["mean_confidence_correct"] == pytest.approx(sum(right) / len(right))
    report = (run_dir / "report.html").read_text()
    assert "Length-controlled scores" in report and "weighted by the judge&#39;s confidence" in (
        report
    )


def _right(row: dict, quality: dict) -> bool:
    better = "A" if quality[row["presented_a"]] > quality[row["presented_b"]] else "B"
    return row["winner"] == better


async def test_without_the_options_the_summary_says_so_and_confidence_tracks_correctness(
    client: Client, queue: str
) -> None:
    result = await run(client, queue, custom=Profile(n=10, k=2, t=0, m=8), seed=2)
    summary = json.loads((Path(result.run_dir) / "summary.json").read_text())
    assert summary["length_control"] is None and summary["weighting"] == "none"
    # The sim judge's confidence is |2p - 1| of its chance p of picking A: a wrong verdict is
    # likelier where p is near 1/2, so right verdicts are the surer ones.
    agree = summary["judge"]["confidence_vs_correctness"]
    assert agree["mean_confidence_correct"] > agree["mean_confidence_incorrect"], agree
    assert agree["concordance"] > 0.6, agree


def test_think_rank_and_the_mcp_rank_tool_take_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from activities.config import load_settings
    from client.mcp.args import RankArgs
    from client.tournament_cli import think
    from client.tournament_inputs import build_input, build_rank_input
    from client.tournament_services import rank

    monkeypatch.setenv("PONDER_HOME", str(tmp_path))
    settings = load_settings(None)
    flags = ["--length-control", "--weight-by-confidence"]
    params = think.make_context("think", ["x", "--provider", "sim", "--dry-run", *flags]).params
    thought = build_input(settings, **params)
    assert thought.length_control and thought.weight_by_confidence
    plain = build_input(
        settings, **think.make_context("think", ["x", "--provider", "sim", "--dry-run"]).params
    )
    assert not (plain.length_control or plain.weight_by_confidence)

    files = []
    for name, text in (("short", "an answer"), ("long", "a much longer answer " * 20)):
        path = tmp_path / f"{name}.txt"
        path.write_text(text)
        files.append(str(path))
    parsed = rank.make_context("rank", [*files, "--task", "x", *flags]).params
    assert parsed["length_control"] is True and parsed["weight_by_confidence"] is True
    ranked = build_rank_input(
        settings,
        tuple(files),
        task="x",
        rubric=None,
        model="sim:default",
        mode="auto",
        rank_k=None,
        rank_seed=None,
        rank_max_calls=None,
        max_calls=None,
        seed=1,
        run_id="rank-x",
        length_control=parsed["length_control"],
        weight_by_confidence=parsed["weight_by_confidence"],
    )
    assert ranked.length_control and ranked.weight_by_confidence
    args = RankArgs.model_validate(
        {
            "task": "x",
            "candidates": [{"id": "a", "text": "1"}, {"id": "b", "text": "2"}],
            "length_control": True,
            "weight_by_confidence": True,
        }
    )
    assert args.length_control and args.weight_by_confidence
