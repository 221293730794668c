"""The campaign report as a person reads it, parsed as a DOM: each scenario's task and scorer,
the cost-vs-score plot (ticks, axis labels, one distinct marker per variant even where two
variants coincide, a legend), each cell's prompt hash and its judge's verdict.

Pure: ``render_report`` over fixed records (the report is a function of records and design);
the workflow's own report is checked in ``test_workflow.py`` and ``test_capture.py``.
"""

from __future__ import annotations

import math
from typing import Any

from activities.campaign.plot import nice_ticks, pareto_plot
from activities.campaign.report import ReportDesign, render_report
from tests.campaigns.helpers import document
from tests.tournament.test_report import Node, parse
from workflows.campaign.records import JudgeMetadata, RunRecord

EVIL = "<script>alert('x')</script>"


def record(variant: str, scenario: str, seed: int, score: float, **fields: Any) -> RunRecord:
    return RunRecord(
        run_id=f"{variant}-{scenario}-{seed}",
        campaign="c",
        variant=variant,
        scenario=scenario,
        seed=seed,
        split="holdout",
        model="sim:default",
        prompt_hash=fields.pop("prompt_hash", "0" * 64),
        config_hash="h",
        commit_sha="abc",
        wall_ms=1.0,
        cost_usd=0.0,
        holdout_score=score,
        **fields,
    )


def design(doc: dict[str, Any]) -> ReportDesign:
    return ReportDesign.from_document(
        "camp-1", doc, fingerprint="f" * 64, status="completed", planned_cells=12
    )


def report(doc: dict[str, Any], records: list[RunRecord]) -> Node:
    _, files = render_report(design(doc), records)
    assert EVIL not in files["report.html"]  # task text and verdicts are escaped
    return parse(files["report.html"]).root


def two_singles() -> tuple[dict[str, Any], list[RunRecord]]:
    """A single shot and a same-config single (the same cost and mean)."""
    doc = document()
    doc["variants"][1] = {"id": "same", "kind": "single", "config": {"model": "sim:default"}}
    doc["scenarios"] = [
        {"id": "s0", "task": f"Sort the list. {EVIL}", "scorer": {"kind": "sim_truth"}},
        {"id": "s1", "task": "x" * 5000, "scorer": {"kind": "regex", "pattern": "O\\(n\\)"}},
    ]
    records = [
        record(v, s, seed, 0.1 * seed) for v in ("single", "same") for s in ("s0", "s1")
        for seed in range(3)
    ]  # fmt: skip
    return doc, records


def test_each_scenario_shows_its_task_and_scorer() -> None:
    doc, records = two_singles()
    root = report(doc, records)
    rows = {r.attrs["data-scenario"]: r for r in root.find_all("tr", cls="scenario-row")}
    assert list(rows) == ["s0", "s1"]
    cells = [td.text() for td in rows["s0"].find_all("td")]
    assert cells[0] == "s0" and cells[1] == f"Sort the list. {EVIL}" and cells[2] == "sim_truth"
    assert "hidden quality" in cells[3]
    long = rows["s1"].one("td", cls="task")
    assert long.one("pre").text() == "x" * 4000
    assert "5000 characters; cut here, whole in campaign.json" in long.text()
    assert "RE2 'O\\\\(n\\\\)' matches anywhere" in rows["s1"].one("td", cls="rule").text()


def test_the_plot_has_ticks_labels_and_a_mark_per_variant_where_two_coincide() -> None:
    doc, records = two_singles()
    svg = report(doc, records).one("svg", id="pareto")
    x_labels = [g.one("text").text() for g in svg.find_all("g", cls="x-tick")]
    y_labels = [g.one("text").text() for g in svg.find_all("g", cls="y-tick")]
    assert len(x_labels) >= 2 and len(y_labels) >= 2
    assert all(float(label) >= 0 for label in x_labels)  # USD: no negative ticks
    assert svg.one("text", id="x-label").text() == "mean USD per cell"
    assert svg.one("text", id="y-label").text() == "mean score"
    points = {p.attrs["data-variant"]: p for p in svg.find_all("path", cls="point")}
    assert set(points) == {"single", "same"}
    single, same = points["single"], points["same"]
    # Same cost, same mean: two marks, apart (not one dot), in different shapes.
    distance = math.dist(
        (float(single.attrs["data-x"] or 0), float(single.attrs["data-y"] or 0)),
        (float(same.attrs["data-x"] or 0), float(same.attrs["data-y"] or 0)),
    )
    assert distance >= 12
    assert single.attrs["data-shape"] != same.attrs["data-shape"]
    assert "drawn apart" in single.one("title").text()
    legend = {g.attrs["data-variant"]: g for g in svg.find_all("g", cls="legend-entry")}
    assert list(legend) == ["single", "same"]
    assert legend["same"].attrs["data-shape"] == same.attrs["data-shape"]
    assert legend["single"].one("text").text().startswith("single: mean 0.100, USD 0.0000")


def test_each_cell_shows_its_prompt_hash_and_its_judges_verdict() -> None:
    doc, records = two_singles()
    verdict = f"Fine, {EVIL}.\n0.8"
    judged = JudgeMetadata(
        model="sim:default", answered_by="default", raw_verdict=verdict, grade=0.8, scale=1.0
    )
    records[0] = records[0].model_copy(update={"judge_metadata": judged, "prompt_hash": "ab" * 32})
    rows = report(doc, records).find_all("tr", cls="cell-row")
    first = rows[0]
    assert first.one("td", cls="prompt-hash").text() == "ab" * 6
    assert first.one("td", cls="prompt-hash").attrs["title"] == "ab" * 32
    judge = first.one("td", cls="judge")
    assert judge.text().startswith("sim:default: 0.8 / 1")
    assert judge.one("pre", cls="verdict").text() == verdict
    assert rows[1].one("td", cls="judge").text() == ""  # no judge scored it


def test_nice_ticks_cover_the_range_in_round_steps() -> None:
    assert nice_ticks(0.0, 1.0) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert nice_ticks(0.013, 0.087) == [0.0, 0.02, 0.04, 0.06, 0.08, 0.1]
    assert nice_ticks(-1.2, 2.3) == [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]
    assert nice_ticks(0.0, 0.0) == [0.0, 0.25, 0.5, 0.75, 1.0]  # an empty range is widened
    low, *_, high = nice_ticks(0.4, 0.4)
    assert low <= 0.36 and high >= 0.44
    assert nice_ticks(math.nan, 1.0) == [0.0, 1.0]


def test_points_far_apart_stay_where_they_are() -> None:
    plot = pareto_plot([("a", 0.0, 0.0, False), ("b", 1.0, 1.0, True), ("c", 1.0, 1.0, False)])
    a, b, c = plot.points
    assert not a.moved and b.moved and c.moved
    assert (a.x, a.y) == (plot.x_ticks[0].pos, plot.y_ticks[0].pos)  # at the axes' origin
    assert len({(p.shape, p.colour) for p in plot.points}) == 3
    assert plot.height > plot.plot_height  # the legend below the plot
