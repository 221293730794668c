"""What a tournament has produced so far: candidates, comparisons, scores, events.

Pure (no Temporal import): the workflow owns one ``TournamentRecord`` and passes in the clock
(``workflow.now``), so every timestamp comes from history. Rows are kept in completion order
and read back in schedule order, so artifacts are the same in every run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workflows.model_types import ModelResponse
from workflows.tournament import rng
from workflows.tournament.selection import Discarded
from workflows.tournament.types import (
    CandidateKind,
    CandidateRow,
    CandidateStatus,
    ComparisonRow,
    Event,
    ScoreRow,
)

__all__ = ["TournamentRecord"]

_KIND_ORDER = {"initial": 0, "elite-copy": 1, "mutation": 2}


class TournamentRecord:
    def __init__(self, now: Callable[[], str]) -> None:
        self.now = now
        self.candidates: dict[str, CandidateRow] = {}
        self.populations: dict[int, list[str]] = {}
        self.comparisons: list[ComparisonRow] = []
        self.scores: list[ScoreRow] = []
        self.events: list[Event] = []
        self.leaderboard: list[ScoreRow] = []
        self.refused: list[str] = []
        """Refused control signals, newest last (shown by ``status``)."""

    def event(self, type: str, **data: Any) -> None:
        self.events.append(Event(seq=len(self.events) + 1, ts=self.now(), type=type, data=data))

    def add_candidate(
        self,
        cid: str,
        generation: int,
        kind: CandidateKind,
        parent: str | None,
        status: CandidateStatus,
        response: ModelResponse,
    ) -> None:
        self.candidates[cid] = CandidateRow(
            id=cid,
            generation=generation,
            kind=kind,
            parent_id=parent,
            status=status,
            text=response.text,
            model=response.model,
            provider=response.provider,
            usage=response.usage,
            created_at=self.now(),
            simulated=response.simulated,
        )

    def discard(self, dropped: list[Discarded]) -> None:
        for d in dropped:
            self.candidates[d.candidate_id] = self.candidates[d.candidate_id].model_copy(
                update={"status": "discarded", "discard_reason": d.reason}
            )

    def copy_elites(self, generation: int, elites: list[str]) -> list[str]:
        """Elite copies keep their metadata and creation time; returns the copies' ids."""
        ids = []
        for i, elite in enumerate(elites):
            copy = self.candidates[elite].model_copy(
                update={
                    "id": rng.elite_id(generation, i),
                    "generation": generation,
                    "kind": "elite-copy",
                    "parent_id": elite,
                    "status": "elite",
                }
            )
            self.candidates[copy.id] = copy
            ids.append(copy.id)
        return ids

    def commit_population(self, generation: int, ids: list[str]) -> None:
        self.populations[generation] = ids
        self.event("population.committed", generation=generation, size=len(ids))

    def add_scores(self, board: list[ScoreRow]) -> None:
        self.scores.extend(board)
        self.leaderboard = board
        self.event("ranking.fitted", phase=board[0].phase, leader=board[0].candidate_id)

    def candidates_in_order(self) -> list[CandidateRow]:
        """Schedule order: generation, then initial / elite copies / mutants, then index."""

        def key(candidate: CandidateRow) -> tuple[int, int, int, str]:
            parts = rng.parse_candidate_id(candidate.id)
            index = parts.index if parts else 0
            return (candidate.generation, _KIND_ORDER[candidate.kind], index, candidate.id)

        return sorted(self.candidates.values(), key=key)

    def comparisons_in_order(self, phase: str | None = None) -> list[ComparisonRow]:
        """Schedule order (phase, then pair index), never completion order."""
        phases = list(dict.fromkeys(c.phase for c in self.comparisons))
        rows = [c for c in self.comparisons if phase is None or c.phase == phase]
        return sorted(rows, key=lambda c: (phases.index(c.phase), int(c.id.rpartition("#")[2])))
