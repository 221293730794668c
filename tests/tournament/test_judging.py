"""Judging through the real Tournament workflow: both orders, judge panels, the judge report,
bootstrap intervals, with the sim judge's position bias and self-preference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.config import Settings
from client.api import Ponder
from client.session import Session
from tests.tournament.helpers import read_jsonl, run
from workflows.tournament.profiles import Profile
from workflows.tournament.types import RoleModels


def summary_of(run_dir: str) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "summary.json").read_text())


async def test_both_orders_judge_every_pair_twice_and_cancel_a_biased_judge(
    client: Client, queue: str
) -> None:
    # position_bias=1: the judge always picks whichever candidate it sees first.
    biased = "sim:default,position_bias=1"
    result = await run(
        client,
        queue,
        profile="quick",
        seed=3,
        models=RoleModels(judge=biased),
        judge_orders="both",
    )
    # quick: 4 + (4 + 3) + 4 judge pairs -> 4 + 2*4 + 3 + 2*4 calls.
    assert result.spent.calls == 23
    run_dir = Path(result.run_dir)
    usage = read_jsonl(run_dir / "usage.jsonl")
    assert sum(row["role"] == "judge" for row in usage) == 16
    rows = read_jsonl(run_dir / "comparisons.jsonl")
    assert len(rows) == 8
    for row in rows:
        first, second = row["verdicts"]
        assert (first["presented_a"], first["presented_b"]) == (
            row["presented_a"],
            row["presented_b"],
        )
        assert (second["presented_a"], second["presented_b"]) == (
            row["presented_b"],
            row["presented_a"],
        )
        # Each order's verdict says "A" (the first shown): they disagree, so the pair is a tie.
        assert first["winner"] == second["winner"] == "A"
        assert row["winner"] == "tie"
    judge = summary_of(result.run_dir)["judge"]
    assert judge["orders"] == "both"
    assert judge["first_position_win_rate"]["rate"] == 1.0
    assert judge["flip_rate"]["count"] == judge["flip_rate"]["total"] == 8
    assert judge["position_bias"]["significant"] is True


async def test_one_order_stays_the_reference_and_reports_the_bias(
    client: Client, queue: str
) -> None:
    result = await run(client, queue, profile="quick", seed=3)
    assert result.spent.calls == 15
    rows = read_jsonl(Path(result.run_dir) / "comparisons.jsonl")
    assert all(row["verdicts"] is None for row in rows)
    judge = summary_of(result.run_dir)["judge"]
    assert judge["orders"] == "one" and "flip_rate" not in judge
    first = judge["first_position_win_rate"]
    assert first["total"] == 8 and first["low"] <= 0.5 <= first["high"]
    assert judge["self_preference_risk"] == []


async def test_a_panel_judges_by_majority_and_reports_agreement(
    client: Client, queue: str, settings: Settings
) -> None:
    panel = ["sim:default,accuracy=0.95", "sim:default,accuracy=0.9", "sim:default,position_bias=1"]
    # Through the Python client (client/api.py), as a script would.
    ponder = Ponder(Session(client, settings.model_copy(update={"task_queue": queue}), False))
    started = await ponder.tournament(
        "Sort a list in place.", profile="quick", seed=5, judges=panel
    )
    result = await started.result()
    assert result.spent.calls == 4 + 3 * 4 + 3 + 3 * 4
    rows = read_jsonl(Path(result.run_dir) / "comparisons.jsonl")
    patterns = set()
    for row in rows:
        judges = [v["judge"] for v in row["verdicts"]]
        assert judges == panel
        # Spread: on a phase's even pairs judges 0 and 2 see the scheduled order first and
        # judge 1 the swapped one; on its odd pairs the other way round.
        orders = [v["presented_a"] == row["presented_a"] for v in row["verdicts"]]
        even = int(row["id"].rpartition("#")[2]) % 2 == 0
        assert orders == ([True, False, True] if even else [False, True, False])
        patterns.add(even)
    assert patterns == {True, False}
    judge = summary_of(result.run_dir)["judge"]
    assert judge["panel"]["first_position_win_rate"]["total"] <= len(rows)
    by_judge = judge["by_judge"]
    assert set(by_judge) == set(panel)
    for entry in by_judge.values():
        assert entry["agreement_with_majority"]["total"] == len(rows)


async def test_self_preference_is_flagged_and_measured(client: Client, queue: str) -> None:
    # Generators of two families; a judge of one of them that prefers its own (always).
    result = await run(
        client,
        queue,
        custom=Profile(n=6, k=2, t=1, m=4),
        seed=2,
        models=RoleModels(
            generate="sim:default,family=claude",
            mutate="sim:default,family=openai",
            judge="sim:default,family=claude,self_preference=1",
        ),
    )
    judge = summary_of(result.run_dir)["judge"]
    (risk,) = judge["self_preference_risk"]
    assert risk["family"] == "claude" and risk["generators"] == ["sim:default,family=claude"]
    own = judge["own_family_win_rate"]["sim:default,family=claude,self_preference=1"]
    assert own["total"] > 0 and own["rate"] == 1.0
    report = (Path(result.run_dir) / "report.html").read_text()
    assert "self-preference" in report


@pytest.mark.parametrize("resamples", [1000])
async def test_final_scores_carry_bootstrap_intervals(
    client: Client, queue: str, resamples: int
) -> None:
    result = await run(client, queue, profile="balanced", seed=4, bootstrap_resamples=resamples)
    summary = summary_of(result.run_dir)
    confidence = summary["confidence"]
    assert confidence["resamples"] == resamples and confidence["level"] == 0.95
    assert confidence["intervals_valid"] is True  # a regular schedule
    assert confidence["method"].startswith("profile likelihood")  # a run started now
    final = summary["final_scores"]
    for row in final:
        assert row["score_low"] <= row["score"] <= row["score_high"]
        assert 1 <= row["rank_high"] <= row["rank_low"] <= len(final)
        above = sum(other["score_low"] > row["score_high"] for other in final)
        assert row["rank_high"] == 1 + above
        assert 0.0 <= row["top_share"] <= 1.0
    # Separated: the winner's interval clears every other's, so its worst rank is 1.
    winner = final[0]
    clears = all(winner["score_low"] > other["score_high"] for other in final[1:])
    assert confidence["winner_separated"] == clears == (winner["rank_low"] == 1)
    report = (Path(result.run_dir) / "report.html").read_text()
    assert 'class="score-interval"' in report


async def test_the_report_recovers_a_configured_position_bias(client: Client, queue: str) -> None:
    # 10 candidates, 20 + 40 pairs, both orders: 120 verdicts of a judge that picks the first
    # shown half the time whatever the qualities.
    result = await run(
        client,
        queue,
        custom=Profile(n=10, k=4, t=1, m=8),
        seed=8,
        models=RoleModels(judge="sim:default,position_bias=0.5"),
        judge_orders="both",
        concurrency={"generate": 16, "judge": 16, "mutate": 16},
    )
    judge = summary_of(result.run_dir)["judge"]
    bias = judge["position_bias"]
    assert judge["verdicts"] == 120
    assert bias["low"] <= 0.5 <= bias["high"] and bias["significant"] is True
    report = (Path(result.run_dir) / "report.html").read_text()
    assert "favours the first-shown candidate" in report
