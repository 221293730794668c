"""A paper run with 20 KB candidates stays small in history; its report shows what happened."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from temporalio.client import Client

from tests.tournament.helpers import read_jsonl, start


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[str] = []
        self.cells: dict[tuple[str, str], str] = {}
        self._cell: tuple[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and "leaderboard-row" in (found.get("class") or ""):
            self.rows.append(found["data-candidate-id"] or "")
        if tag == "td" and "win-cell" in (found.get("class") or ""):
            self._cell = (found["data-row"] or "", found["data-col"] or "")
            self.cells[self._cell] = ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self.cells[self._cell] += data.strip()

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None


async def test_paper_run_with_20kb_candidates_fits_history_limits(
    client: Client, worker_queue: str
) -> None:
    handle = await start(
        client, worker_queue, profile="paper", seed=8, model="sim:default,chars=20000"
    )
    result = await handle.result()
    assert len(result.final_answer) > 20_000
    history = await handle.fetch_history()
    size = sum(event.ByteSize() for event in history.events)
    print(f"\npaper profile, 20 KB candidates: {len(history.events)} events, {size} bytes")
    assert len(history.events) < 5_000
    assert size < 2_000_000

    run_dir = Path(result.run_dir)
    parser = _Cells()
    parser.feed((run_dir / "report.html").read_text())
    final = [s for s in read_jsonl(run_dir / "scores.jsonl") if s["phase"] == "final_judging"]
    assert parser.rows == [s["candidate_id"] for s in sorted(final, key=lambda s: s["rank"])]
    comparisons = [
        c for c in read_jsonl(run_dir / "comparisons.jsonl") if c["phase"] == "final_judging"
    ]
    first = comparisons[0]
    winner = first["presented_a"] if first["winner"] == "A" else first["presented_b"]
    loser = first["presented_b"] if winner == first["presented_a"] else first["presented_a"]
    wins = sum(
        1
        for c in comparisons
        if {c["presented_a"], c["presented_b"]} == {winner, loser}
        and (c["presented_a"] if c["winner"] == "A" else c["presented_b"]) == winner
    )
    assert parser.cells[(winner, loser)].startswith(str(wins))
