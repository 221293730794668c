"""The Campaign workflow on the real dev server with the sim provider."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from tests.campaigns.helpers import document
from tests.tournament.test_report import parse
from workflows.campaign.configs import prompt_hash
from workflows.campaign.document import MAX_CELLS, Variant
from workflows.campaign.types import CampaignProgress, CampaignResult
from workflows.names import CAMPAIGN, QUERY_PROGRESS


async def start(client: Client, queue: str, doc: dict[str, Any]) -> WorkflowHandle:
    return await client.start_workflow(
        CAMPAIGN,
        doc,
        id=f"camp-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=CampaignResult,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
    )


async def failure(client: Client, queue: str, doc: dict[str, Any]) -> ApplicationError:
    handle = await start(client, queue, doc)
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    assert isinstance(info.value.cause, ApplicationError), info.value.cause
    return info.value.cause


def records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines()]


async def test_deep_thinking_beats_a_single_shot_on_sim_truth(
    client: Client, worker_queue: str, settings: Settings
) -> None:
    # 2 variants x 3 scenarios x 6 seeds: 18 pairs. (A single shot's quality is N(0, 1), so a
    # gain of about one standard deviation needs more than 9 pairs to clear q < 0.05.)
    handle = await start(client, worker_queue, document(seeds=list(range(6))))
    result = await handle.result()
    assert result.status == "completed" and result.cells == 36 and result.failed_cells == 0
    assert result.decisions == {"deep": "promote"}
    assert result.recommended_variant == "deep"
    run_dir = Path(result.run_dir)
    assert run_dir == settings.runs_dir / handle.id
    rows = records(run_dir)
    # prompt_hash is of what each variant sends (a tournament's generate prompt), not the task.
    hashes = {(r["variant"], r["scenario"]): r["prompt_hash"] for r in rows}
    assert hashes["deep", "s0"] != hashes["single", "s0"] != hashes["single", "s1"]
    assert hashes["deep", "s0"] == prompt_hash(
        Variant.model_validate(document()["variants"][1]), task="Task number 0."
    )
    # The report names each scenario's task and scorer.
    page = parse((run_dir / "report.html").read_text()).root
    shown = [
        [td.text() for td in r.find_all("td")][:3] for r in page.find_all("tr", cls="scenario-row")
    ]
    assert shown == [[f"s{i}", f"Task number {i}.", "sim_truth"] for i in range(3)]
    assert [(r["variant"], r["scenario"], r["seed"]) for r in rows[:3]] == [
        ("single", "s0", 0),
        ("single", "s0", 1),
        ("single", "s0", 2),
    ]
    # Every cell's own run directory sits beside the campaign's, and its calls are counted.
    for row in rows:
        assert (settings.runs_dir / row["run_id"] / "summary.json").is_file()
        assert row["calls"] == 1 if row["variant"] == "single" else row["calls"] > 1
    # Paired cells share their child seed; scenarios get their own.
    seeds = {(r["scenario"], r["seed"]): r["cell_seed"] for r in rows if r["variant"] == "deep"}
    assert all(seeds[(r["scenario"], r["seed"])] == r["cell_seed"] for r in rows)
    assert len(set(seeds.values())) == 18
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["decisions"] == result.decisions
    assert summary["fingerprint"] == result.fingerprint
    html = (run_dir / "report.html").read_text()
    assert 'data-variant="deep" data-decision="promote"' in html
    assert result.fingerprint in html and 'id="pareto"' in html
    assert not any(asset in html for asset in ("<script", " src=", "<link", "@import"))
    assert "promote deep" in (run_dir / "report.md").read_text()
    progress = await handle.query(QUERY_PROGRESS, result_type=CampaignProgress)
    assert (progress.cells_done, progress.cells_running, progress.leader) == (36, 0, "deep")
    # History grows by a bounded number of events per cell (no continue-as-new needed). A
    # cell is a child (initiated, started, completed) and a settle activity (3 events), and at
    # worst each of its 3 wake-ups gets a workflow task of its own (3 x 3) under load: 15. A
    # judge scorer adds an activity and its task (6): even then the largest campaign
    # (MAX_CELLS) stays under half of Temporal's 50,000 events.
    events = len((await handle.fetch_history()).events)
    assert events <= 15 * result.cells + 40
    assert 21 * MAX_CELLS + 40 < 25_000
    assert progress.spent.calls == sum(r["calls"] for r in rows)


async def test_a_variant_identical_to_the_comparator_is_not_promoted(
    client: Client, worker_queue: str
) -> None:
    doc = document()
    doc["variants"][1] = {"id": "same", "kind": "single", "config": {"model": "sim:default"}}
    result = await (await start(client, worker_queue, doc)).result()
    assert result.decisions == {"same": "equivalent"}
    assert result.recommended_variant == "single"
    # Both sit at one cost and one mean: still two marks on the plot, apart, in two shapes.
    root = parse((Path(result.run_dir) / "report.html").read_text()).root
    points = root.one("svg", id="pareto").find_all("path", cls="point")
    assert [p.attrs["data-variant"] for p in points] == ["single", "same"]
    assert len({(p.attrs["data-x"], p.attrs["data-y"]) for p in points}) == 2
    assert len({p.attrs["data-shape"] for p in points}) == 2
    # The two ask the same question the same way: one prompt hash, the prompt's.
    task = doc["scenarios"][0]["task"]
    sent = prompt_hash(Variant.model_validate(doc["variants"][0]), task=task)
    assert {r["prompt_hash"] for r in records(Path(result.run_dir)) if r["scenario"] == "s0"} == {
        sent
    }


async def test_too_few_pairs_need_more_data(client: Client, worker_queue: str) -> None:
    result = await (await start(client, worker_queue, document(min_pairs=20))).result()
    assert result.decisions == {"deep": "needs_more_data"}
    assert result.recommended_variant == "single"


async def test_preflight_refusals_are_coded(client: Client, worker_queue: str) -> None:
    error = await failure(client, worker_queue, document(comparator="ghost"))
    assert error.type == "comparator.unknown"
    error = await failure(client, worker_queue, {"schema": "ponder-campaign/1"})
    assert error.type == "input.invalid" and "campaign_id" in error.message
