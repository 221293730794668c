"""report.html is checked in the DOM (stdlib HTMLParser), not just for existing."""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

import pytest

from activities.tournament.report import (
    CandidateRow,
    ComparisonRow,
    ReportData,
    ScoreRow,
    render_report,
    report_data_from_run_dir,
)
from activities.tournament.report_svg import nice_ticks

EVIL = "<script>alert('x')</script> & \"quotes\""
_VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str, *, cls: str | None = None, **attrs: str) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, str):
                continue
            if (
                child.tag == tag
                and (cls is None or cls in child.classes)
                and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            ):
                found.append(child)
            found.extend(child.find_all(tag, cls=cls, **attrs))
        return found

    def one(self, tag: str, **kwargs: Any) -> Node:
        (node,) = self.find_all(tag, **kwargs)
        return node


class DomBuilder(HTMLParser):
    """A tiny DOM: enough structure to find rows and cells and read their text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.current = self.root
        self.tags: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in _VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(page: str) -> DomBuilder:
    builder = DomBuilder()
    builder.feed(page)
    builder.close()
    assert builder.current is builder.root, "unclosed elements"
    return builder


IDS = ["g0-c0", "g0-c1", "g0-c2", "g0-c3"]
TRUE_Q = {"g0-c0": 0.25, "g0-c1": 1.5, "g0-c2": -0.4, "g0-c3": -1.1}


def _cmp(n: int, phase: str, a: str, b: str, winner: Literal["A", "B", "tie"]) -> ComparisonRow:
    gen = 1 if phase.startswith("generation") else None
    return ComparisonRow(
        id=f"cmp-{n}", phase=phase, generation=gen, presented_a=a, presented_b=b, winner=winner
    )


# Six comparisons over two phases. The generation phase says the opposite of the final one
# (g0-c3 beats g0-c1 twice) so the tests see that the matrix shows the leaderboard's phase.
COMPARISONS = [
    _cmp(0, "generation_judging:1", "g0-c3", "g0-c1", "A"),
    _cmp(1, "generation_judging:1", "g0-c1", "g0-c3", "B"),
    _cmp(2, "final_judging", "g0-c1", "g0-c0", "A"),
    _cmp(3, "final_judging", "g0-c0", "g0-c2", "A"),
    _cmp(4, "final_judging", "g0-c3", "g0-c1", "B"),
    _cmp(5, "final_judging", "g0-c2", "g0-c3", "tie"),
]
FINAL = [c for c in COMPARISONS if c.phase == "final_judging"]


def _score(phase: str, cid: str, score: float, rank: int, w: int, lo: int, t: int) -> ScoreRow:
    gen = 1 if phase.startswith("generation") else None
    return ScoreRow(
        phase=phase, generation=gen, candidate_id=cid, score=score, rank=rank,
        tie_group=rank, wins=w, losses=lo, ties=t, comparisons=w + lo + t,
    )  # fmt: skip


SCORES = [
    _score("generation_judging:1", "g0-c3", 1.0, 1, 2, 0, 0),
    _score("generation_judging:1", "g0-c0", 0.0, 2, 0, 0, 0),
    _score("generation_judging:1", "g0-c2", 0.0, 3, 0, 0, 0),
    _score("generation_judging:1", "g0-c1", -1.0, 4, 0, 2, 0),
    _score("final_judging", "g0-c1", 1.2, 1, 2, 0, 0),
    _score("final_judging", "g0-c0", 0.3, 2, 1, 1, 0),
    _score("final_judging", "g0-c2", -0.75, 3, 0, 1, 1),
    _score("final_judging", "g0-c3", -0.75, 4, 0, 1, 1),
]
RANKED = ["g0-c1", "g0-c0", "g0-c2", "g0-c3"]


def _data(*, simulated: bool) -> ReportData:
    candidates = [
        CandidateRow(
            id=cid,
            text=EVIL if cid == "g0-c2" else f"answer {cid}",
            true_quality=TRUE_Q[cid] if simulated else None,
        )
        for cid in IDS
    ]
    return ReportData(
        run_id="run-1", status="completed", winner_id="g0-c1", simulated=simulated,
        calls=12, tokens=3456, usd=0.0123, final_answer=f"final {EVIL}",
        candidates=candidates, comparisons=COMPARISONS, scores=SCORES,
    )  # fmt: skip


def _leaderboard_ids(dom: DomBuilder) -> list[str]:
    rows = dom.root.one("table", id="leaderboard").find_all("tr", cls="leaderboard-row")
    return [r.attrs["data-candidate-id"] or "" for r in rows]


def test_leaderboard_rows_are_the_final_ranking_in_order() -> None:
    dom = parse(render_report(_data(simulated=False)))
    table = dom.root.one("table", id="leaderboard")
    rows = table.find_all("tr", cls="leaderboard-row")
    assert _leaderboard_ids(dom) == RANKED
    assert [r.one("td", cls="rank").text() for r in rows] == ["1", "2", "3", "4"]
    assert [r.one("td", cls="candidate").text() for r in rows] == RANKED
    assert rows[0].one("td", cls="score").text() == "+1.200"
    assert "1/1/0" in [td.text() for td in rows[1].find_all("td")]
    assert [r for r in rows if "winner" in r.classes] == [rows[0]]
    assert dom.root.one("dd", id="winner").text() == "g0-c1"


def test_win_matrix_cells_count_the_final_comparisons() -> None:
    dom = parse(render_report(_data(simulated=False)))
    cells = dom.root.one("table", id="win-matrix").find_all("td", cls="win-cell")
    assert len(cells) == len(IDS) ** 2
    wins: Counter[tuple[str, str]] = Counter()
    played: set[frozenset[str]] = set()
    for c in FINAL:
        played.add(frozenset((c.presented_a, c.presented_b)))
        if c.winner != "tie":
            winner, loser = (
                (c.presented_a, c.presented_b)
                if c.winner == "A"
                else (c.presented_b, c.presented_a)
            )
            wins[winner, loser] += 1
    seen = set()
    for cell in cells:
        row, col = cell.attrs["data-row"] or "", cell.attrs["data-col"] or ""
        seen.add((row, col))
        if row == col or frozenset((row, col)) not in played:
            assert cell.text() == "", (row, col)
        else:
            assert cell.text().split(" (")[0] == str(wins[row, col]), (row, col)
    assert seen == {(r, c) for r in IDS for c in IDS}
    # The generation phase's two wins of g0-c3 over g0-c1 are not in the final matrix.
    by_pos = {(c.attrs["data-row"], c.attrs["data-col"]): c for c in cells}
    assert by_pos["g0-c3", "g0-c1"].text() == "0"
    assert by_pos["g0-c1", "g0-c3"].text() == "1"
    assert by_pos["g0-c2", "g0-c3"].text() == "0 (1 tie)"  # a tie reads as one, not a loss
    assert by_pos["g0-c3", "g0-c2"].text() == "0 (1 tie)"
    assert "style" in by_pos["g0-c1", "g0-c0"].attrs  # shaded by win share


def test_model_output_is_escaped() -> None:
    page = render_report(_data(simulated=False))
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    dom = parse(page)
    assert dom.tags["script"] == 0
    # The parser unescapes the text back to exactly what the model wrote.
    texts = [p.text() for p in dom.root.find_all("pre", cls="candidate-text")]
    assert EVIL in texts
    assert dom.root.one("pre", id="final-answer").text() == f"final {EVIL}"


def test_page_is_self_contained() -> None:
    page = render_report(_data(simulated=True))
    dom = parse(page)
    assert dom.tags["link"] == 0 and dom.tags["script"] == 0 and dom.tags["img"] == 0
    assert "src=" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert dom.tags["style"] == 1
    ladder = dom.root.one("svg", cls="score-ladder")
    assert all(cid in ladder.text() for cid in IDS)


def test_true_quality_column_only_for_simulated_runs() -> None:
    plain = parse(render_report(_data(simulated=False)))
    headers = [th.text() for th in plain.root.one("table", id="leaderboard").find_all("th")]
    assert "true q" not in headers
    assert plain.root.find_all("td", cls="true-quality") == []
    assert plain.root.find_all("span", cls="sim") == []
    assert plain.root.find_all("svg", cls="line-chart") == []

    sim = parse(render_report(_data(simulated=True)))
    table = sim.root.one("table", id="leaderboard")
    headers = [th.text() for th in table.find_all("th")]
    assert headers[:2] == ["rank", "true q"]  # beside the rank
    qs = [td.text() for td in table.find_all("td", cls="true-quality")]
    assert qs == [f"{TRUE_Q[cid]:.3f}" for cid in RANKED]
    assert sim.root.one("span", cls="sim").text() == "simulated"
    assert sim.root.find_all("svg", cls="line-chart")


def test_progress_lists_phases_in_order() -> None:
    dom = parse(render_report(_data(simulated=True)))
    rows = dom.root.one("table", id="progress").find_all("tr", cls="progress-row")
    assert [r.attrs["data-phase"] for r in rows] == ["generation_judging:1", "final_judging"]
    cells = [td.text() for td in rows[1].find_all("td")]
    assert cells[:3] == ["final_judging", "4", "g0-c1"]
    assert cells[-2] == f"{max(TRUE_Q.values()):.3f}"


def test_empty_run_renders() -> None:
    dom = parse(render_report(ReportData(run_id="r", status="running")))
    assert _leaderboard_ids(dom) == []
    assert dom.root.one("table", id="win-matrix").find_all("td") == []


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    summary: dict[str, Any] = {
        "run_id": "run-dir-1", "status": "completed", "winner_id": "g0-c1",
        "final_answer_path": "artifacts/final.txt", "winner_path": "artifacts/winner.txt",
        "profile": {"n": 4}, "profile_name": None, "models": {}, "calls": 6,
        "usage": {"total_tokens": 1}, "final_scores": [], "simulated": True,
        "final_answer_is_postprocessed": False, "completed_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    candidates = [
        {
            "id": cid, "generation": 0, "kind": "initial", "parent_id": None,
            "status": "generated", "discard_reason": None, "text_sha256": "0" * 64,
            "text": f"Simulated answer.\nbody\n[sim q={TRUE_Q[cid]:.3f} id={cid}]",
            "model": "sim:default", "provider": "sim", "usage": {"input_tokens": 3},
            "created_at": "2026-01-01T00:00:00Z",
        }
        for cid in IDS
    ]  # fmt: skip
    _write_jsonl(tmp_path / "candidates.jsonl", candidates)
    comparisons = [
        {**c.model_dump(), "usage": {}, "scheduled_a": c.presented_b, "confidence": 0.5}
        for c in COMPARISONS
    ]
    _write_jsonl(tmp_path / "comparisons.jsonl", comparisons)
    _write_jsonl(tmp_path / "scores.jsonl", [s.model_dump() for s in SCORES])
    usage = [
        {"usage_id": f"u{i}", "phase": "final_judging", "total_tokens": 100, "usd": 0.5}
        for i in range(3)
    ] + [{"usage_id": "u3", "input_tokens": 7, "output_tokens": 3, "usd": None}]
    _write_jsonl(tmp_path / "usage.jsonl", usage)
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "final.txt").write_text("the polished answer", encoding="utf-8")
    return tmp_path


def test_report_data_from_run_dir(run_dir: Path) -> None:
    data = report_data_from_run_dir(run_dir)
    assert (data.run_id, data.status, data.winner_id, data.simulated) == (
        "run-dir-1", "completed", "g0-c1", True,
    )  # fmt: skip
    assert [c.id for c in data.candidates] == IDS
    assert {c.id: c.true_quality for c in data.candidates} == TRUE_Q  # from the sim trailers
    assert [c.id for c in data.comparisons] == [c.id for c in COMPARISONS]
    assert data.comparisons[2].confidence == 0.5
    assert data.scores == SCORES
    # From usage.jsonl; one call without a price makes the cost unknown, never a partial sum.
    assert (data.calls, data.tokens, data.usd) == (4, 310, None)
    assert data.final_answer == "the polished answer"

    dom = parse(render_report(data))
    assert _leaderboard_ids(dom) == RANKED
    assert dom.root.find_all("td", cls="true-quality")


def test_report_data_falls_back_to_summary_and_winner_text(run_dir: Path) -> None:
    (run_dir / "usage.jsonl").unlink()
    (run_dir / "artifacts" / "final.txt").unlink()
    data = report_data_from_run_dir(run_dir)
    assert (data.calls, data.tokens) == (6, 1)
    assert data.final_answer.startswith("Simulated answer.")
    assert data.final_answer.endswith("id=g0-c1]")


def test_priced_usage_sums_and_unpriced_shows_unknown(run_dir: Path) -> None:
    rows = [
        {"usage_id": f"u{i}", "phase": "final_judging", "total_tokens": 100, "usd": 0.5}
        for i in range(3)
    ]
    _write_jsonl(run_dir / "usage.jsonl", rows)
    assert report_data_from_run_dir(run_dir).usd == 1.5
    rows[1] |= {"usd": 0.0, "priced": False}  # a call of a model with no known price
    _write_jsonl(run_dir / "usage.jsonl", rows)
    data = report_data_from_run_dir(run_dir)
    assert data.usd is None
    page = render_report(data)
    facts = _facts(parse(page))
    assert facts["cost"] == "unknown"
    assert "$0.0000" not in page


def _facts(dom: DomBuilder) -> dict[str, str]:
    facts = dom.root.one("dl", id="facts")
    names = [dt.text() for dt in facts.find_all("dt")]
    return dict(zip(names, [dd.text() for dd in facts.find_all("dd")], strict=True))


def test_header_shows_task_models_profile_seed_and_limits(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    summary |= {
        "profile": {"n": 4, "k": 2, "t": 1, "m": 2, "lambda": 0.01},
        "profile_name": "quick",
        "seed": 42,
        "models": {"generate": None, "judge": "sim:judge", "finalize": None, "default": "sim:x"},
        "budget": {"max_calls": 16, "max_usd": 5.0, "max_input_tokens": None},
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    (run_dir / "config.json").write_text(json.dumps({"task": f"Sort {EVIL}"}))
    page = render_report(report_data_from_run_dir(run_dir))
    dom = parse(page)
    facts = _facts(dom)
    assert facts["profile"] == "quick (n=4, k=2, t=1, m=2)"
    assert facts["seed"] == "42"
    assert facts["limits"] == "max_calls=16, max_usd=5.00"
    assert facts["models"] == "generate: sim:x, judge: sim:judge, mutate: sim:x"
    assert dom.root.one("pre", id="task").text() == f"Sort {EVIL}"
    assert "<script" not in page


def test_lenient_rows_derive_from_the_strict_rows() -> None:
    from workflows.tournament import types as strict

    for lenient, row in (
        (CandidateRow, strict.CandidateRow),
        (ComparisonRow, strict.ComparisonRow),
        (ScoreRow, strict.ScoreRow),
    ):
        assert issubclass(lenient, row)
        # Same fields, same types: only defaults are added (plus the sim's true quality).
        for name, field in row.model_fields.items():
            assert lenient.model_fields[name].annotation == field.annotation, name
    assert set(CandidateRow.model_fields) - set(strict.CandidateRow.model_fields) == {
        "text_ref",
        "true_quality",
    }


def test_ask_report_uses_the_shared_layout() -> None:
    from activities.ask_report import render_ask_report

    summary = {
        "run_id": "ask-1",
        "status": "completed",
        "model": "sim:default",
        "usage": {"input_tokens": 3, "output_tokens": 5},
        "usd": None,
    }
    dom = parse(render_ask_report(summary, f"answer {EVIL}"))
    facts = _facts(dom)
    assert facts["status"] == "completed" and facts["model"] == "sim:default"
    assert facts["cost"] == "unknown"
    assert dom.root.one("pre", id="answer").text() == f"answer {EVIL}"
    assert dom.tags["style"] == 1 and dom.tags["script"] == 0


def _trust_data(*, separated: bool, significant: bool) -> ReportData:
    data = _data(simulated=False)
    intervals = {"g0-c1": (0.9, 1.6), "g0-c0": (-0.2, 0.8 if separated else 1.0)}
    intervals |= {"g0-c2": (-1.3, 0.1), "g0-c3": (-1.4, 0.0)}
    finals = [s for s in SCORES if s.phase == "final_judging"]
    data.final_scores = [
        s.model_dump() | {"score_low": intervals[s.candidate_id][0],
                          "score_high": intervals[s.candidate_id][1], "top_share": 0.5}
        for s in finals
    ]  # fmt: skip
    data.confidence = {"resamples": 1000, "winner_separated": separated, "winner_top_share": 0.9}
    rate = {"count": 70, "total": 100, "rate": 0.7, "low": 0.6, "high": 0.78, "level": 0.95}
    data.judge = {
        "orders": "one",
        "judges": ["sim:a"],
        "first_position_win_rate": rate,
        "position_bias": {"estimate": 0.4, "low": 0.2, "high": 0.56, "significant": significant},
        "self_preference_risk": [{"note": "judge sim:a is of the claude family, like x"}],
    }
    return data


def test_intervals_judge_table_and_winner_line_are_in_the_dom() -> None:
    dom = parse(render_report(_trust_data(separated=True, significant=True)))
    rows = dom.root.one("table", id="leaderboard").find_all("tr", cls="leaderboard-row")
    assert [r.one("td", cls="interval").text() for r in rows] == [
        "[+0.90, +1.60]",
        "[-0.20, +0.80]",
        "[-1.30, +0.10]",
        "[-1.40, +0.00]",
    ]
    bars = dom.root.one("svg", cls="score-intervals").find_all("g", cls="score-interval")
    assert [b.attrs["data-candidate-id"] for b in bars] == RANKED
    line = dom.root.one("p", id="winner-line").text()
    assert "lies above runner-up g0-c0's [-0.20, +0.80]" in line and "90%" in line
    judge = dom.root.one("table", id="judge").find_all("tr", cls="judge-row")
    assert "70% (70 of 100; 95% CI 60%–78%)" in [td.text() for td in judge[0].find_all("td")]
    notes = [p.text() for p in dom.root.find_all("p", cls="judge-note")]
    assert any("favours the first-shown candidate" in n for n in notes)
    assert any(n.startswith("Possible self-preference: judge sim:a") for n in notes)


def test_overlapping_intervals_and_an_unbiased_judge_say_so() -> None:
    dom = parse(render_report(_trust_data(separated=False, significant=False)))
    assert "do not separate them" in dom.root.one("p", id="winner-line").text()
    notes = [p.text() for p in dom.root.find_all("p", cls="judge-note")]
    assert not any("favours" in n for n in notes)


def test_a_panel_run_names_its_panel_and_the_judge_that_is_biased(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    biased = {"count": 70, "total": 100, "rate": 0.7, "low": 0.6, "high": 0.78, "level": 0.95}
    fair = {"count": 50, "total": 100, "rate": 0.5, "low": 0.4, "high": 0.6, "level": 0.95}
    bias = {"estimate": 0.4, "low": 0.2, "high": 0.56, "significant": True}
    summary |= {
        "models": {"generate": None, "judge": None, "finalize": None, "default": "sim:x"},
        "judge": {
            "orders": "one",
            "judges": ["sim:a", "sim:b", "sim:c"],
            "first_position_win_rate": biased,
            "position_bias": bias,
            "panel": {"first_position_win_rate": fair},
            "by_judge": {
                "sim:a": {"first_position_win_rate": fair},
                "sim:b": {"first_position_win_rate": biased, "position_bias": bias},
                "sim:c": {"first_position_win_rate": fair},
            },
        },
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    dom = parse(render_report(report_data_from_run_dir(run_dir)))
    assert _facts(dom)["models"] == (
        "generate: sim:x, judge: panel: sim:a, sim:b, sim:c, mutate: sim:x"
    )
    rows = dom.root.one("table", id="judge").find_all("tr", cls="judge-row")
    first_cells = [r.find_all("td")[0].text() for r in rows]
    assert first_cells == ["all verdicts", "the panel's verdicts", "sim:a", "sim:b", "sim:c"]
    notes = [p.text() for p in dom.root.find_all("p", cls="judge-note")]
    assert len(notes) == 1 and notes[0].startswith("Judge sim:b favours the first-shown")


def test_nice_ticks_are_round_and_span_the_range() -> None:
    assert nice_ticks(-1.4, 1.6) == [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]
    assert nice_ticks(-0.03, 0.02) == [-0.03, -0.02, -0.01, 0.0, 0.01, 0.02]
    assert nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]


def test_the_interval_chart_has_titled_axes_ticks_and_rank_ranges() -> None:
    data = _trust_data(separated=True, significant=False)
    ranges = {"g0-c1": (1, 1), "g0-c0": (2, 2), "g0-c2": (3, 4), "g0-c3": (3, 4)}
    for row in data.final_scores:
        row["rank_high"], row["rank_low"] = ranges[row["candidate_id"]]
    dom = parse(render_report(data))
    chart = dom.root.one("svg", cls="score-intervals")
    titles = [t.text() for t in chart.find_all("text", cls="axis-title")]
    assert any(t.startswith("Bradley-Terry score") for t in titles)
    assert "candidate, best first" in titles
    # intervals span -1.4 to +1.6: ticks every 0.5
    assert [t.text() for t in chart.find_all("text", cls="tick")] == [
        "-1", "-0.5", "0", "+0.5", "+1", "+1.5",
    ]  # fmt: skip
    shown = {
        g.attrs["data-candidate-id"]: g.one("text", cls="rank-range").text()
        for g in chart.find_all("g", cls="score-interval")
    }
    assert shown == {"g0-c1": "#1", "g0-c0": "#2", "g0-c2": "#3–4", "g0-c3": "#3–4"}
    table = dom.root.one("table", id="leaderboard").find_all("td", cls="rank-range")
    assert [td.text() for td in table] == ["1", "2", "3–4", "3–4"]


def test_a_significant_own_family_rate_gets_a_sentence() -> None:
    data = _trust_data(separated=True, significant=False)
    own = {"count": 70, "total": 100, "rate": 0.7, "low": 0.6, "high": 0.78, "level": 0.95}
    data.judge["own_family_win_rate"] = {
        "sim:a": own | {"significant": True},
        "sim:b": own | {"rate": 0.55, "low": 0.45, "high": 0.65, "significant": False},
    }
    notes = [p.text() for p in parse(render_report(data)).root.find_all("p", cls="judge-note")]
    own_notes = [n for n in notes if "own family" in n]
    assert len(own_notes) == 1 and own_notes[0].startswith("Judge sim:a gave the win")
    assert "70%" in own_notes[0] and "60%–78%" in own_notes[0]


def test_a_significant_length_preference_gets_a_sentence() -> None:
    data = _trust_data(separated=True, significant=False)
    data.judge["longer_win_rate"] = {
        "count": 80, "total": 100, "rate": 0.8, "low": 0.71, "high": 0.87, "level": 0.95,
        "significant": True,
    }  # fmt: skip
    notes = [p.text() for p in parse(render_report(data)).root.find_all("p", cls="judge-note")]
    assert any(n.startswith("The verdicts favour the longer candidate") for n in notes)
