"""What a tournament has produced so far: candidates, comparisons, scores, events, outcome.

Pure (no Temporal import): the workflow owns one ``TournamentRecord`` and passes in the clock
(``workflow.now``), so every timestamp comes from history. Rows are built here from what the
calls returned, kept in completion order and read back in schedule order, so artifacts are the
same in every run; ``snapshot`` assembles what the artifact writer gets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workflows.budget import Budget
from workflows.model_types import ModelResponse, Usage
from workflows.tournament import rng, verdicts
from workflows.tournament.judge_parse import JudgeVerdict
from workflows.tournament.profiles import Profile
from workflows.tournament.schedule import ScheduledPair
from workflows.tournament.selection import Discarded
from workflows.tournament.types import (
    CandidateKind,
    CandidateRow,
    CandidateStatus,
    ComparisonRow,
    Event,
    GivenCandidate,
    ScoreIntervals,
    ScoreRow,
    Status,
    TournamentInput,
    TournamentSnapshot,
    UsageRow,
    Verdict,
)

if TYPE_CHECKING:  # the fit's rows arrive from a local activity; numpy stays out of here
    from workflows.tournament.bradley_terry import LeaderboardRow

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
        self.winner_id: str | None = None
        self.final_answer: str | None = None
        self.postprocessed = False
        """True when a finalizer rewrote the winner's text."""
        self.error: str | None = None
        """``code: message`` of a failed run."""
        self.intervals: ScoreIntervals | None = None
        """Bootstrap intervals of the final scores."""

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

    def add_given(self, given: Sequence[GivenCandidate]) -> list[str]:
        """Caller-supplied candidates (the ``rank`` service): generation 0, no call made."""
        for candidate in given:
            self.candidates[candidate.id] = CandidateRow(
                id=candidate.id,
                generation=0,
                kind="initial",
                status="generated",
                text=candidate.text,
                model="given",
                provider="given",
                usage=Usage(),
                created_at=self.now(),
            )
        return [c.id for c in given]

    def add_comparison(
        self,
        phase: str,
        generation: int | None,
        index: int,
        pair: ScheduledPair,
        verdict: JudgeVerdict,
        *,
        response: ModelResponse,
        attempts: int,
        usage: Usage,
        raw_outputs: list[str] | None,
    ) -> ComparisonRow:
        """Recorded as it lands, so a cancel keeps it; read back in schedule order."""
        row = ComparisonRow(
            id=f"{phase}#{index}",
            phase=phase,
            generation=generation,
            presented_a=pair.presented_a,
            presented_b=pair.presented_b,
            scheduled_a=pair.scheduled_a,
            scheduled_b=pair.scheduled_b,
            winner=verdict.winner,
            confidence=verdict.confidence,
            critique_a=verdict.feedback_a,
            critique_b=verdict.feedback_b,
            model=response.model,
            provider=response.provider,
            attempts=attempts,
            usage=usage,
            raw_outputs=raw_outputs,
        )
        self.comparisons.append(row)
        return row

    def add_combined(
        self,
        phase: str,
        generation: int | None,
        index: int,
        pair: ScheduledPair,
        results: Sequence[verdicts.SlotResult],
        *,
        include_raw_outputs: bool,
    ) -> ComparisonRow:
        """One pair judged by several calls (both orders, a panel): their combined verdict, and
        every call's own in ``verdicts``; recorded when the pair's last call lands."""
        calls = [
            Verdict(
                judge=r.slot.judge,
                presented_a=r.slot.presented_a,
                presented_b=r.slot.presented_b,
                winner=r.verdict.winner,
                confidence=r.verdict.confidence,
                attempts=r.attempts,
            )
            for r in results
        ]
        critique_a, critique_b = verdicts.merged_critiques(
            pair, calls, [(r.verdict.feedback_a, r.verdict.feedback_b) for r in results]
        )
        usage = Usage()
        for r in results:
            usage = usage + r.usage
        row = ComparisonRow(
            id=f"{phase}#{index}",
            phase=phase,
            generation=generation,
            presented_a=pair.presented_a,
            presented_b=pair.presented_b,
            scheduled_a=pair.scheduled_a,
            scheduled_b=pair.scheduled_b,
            winner=verdicts.combine(pair, calls),
            confidence=None,  # a combination of verdicts has no one judge's confidence
            critique_a=critique_a,
            critique_b=critique_b,
            model=" + ".join(dict.fromkeys(r.model for r in results)),
            provider=" + ".join(dict.fromkeys(r.provider for r in results)),
            attempts=sum(r.attempts for r in results),
            usage=usage,
            raw_outputs=[t for r in results for t in r.raw_outputs]
            if include_raw_outputs
            else None,
            verdicts=calls,
        )
        self.comparisons.append(row)
        return row

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

    def add_scores(
        self, phase: str, generation: int | None, fitted: Sequence[LeaderboardRow]
    ) -> list[ScoreRow]:
        """The fit's leaderboard as this phase's score rows (best first), now the leaderboard."""
        board = [
            ScoreRow(phase=phase, **(dataclasses.asdict(row) | {"generation": generation}))
            for row in fitted
        ]
        self.scores.extend(board)
        self.leaderboard = board
        self.event("ranking.fitted", phase=phase, leader=board[0].candidate_id)
        return board

    def snapshot(
        self,
        *,
        run_id: str,
        status: Status,
        input: TournamentInput,
        seed: int,
        profile: Profile | None,
        profile_name: str | None,
        usage: list[UsageRow],
        budget: Budget,
    ) -> TournamentSnapshot:
        """Everything the artifact writer needs. Pydantic copies the lists, so later phases
        cannot change what a pending write sends."""
        return TournamentSnapshot(
            run_id=run_id,
            status=status,
            input=input,
            seed=seed,
            profile=profile,
            profile_name=profile_name,
            candidates=self.candidates_in_order(),
            populations=self.populations,
            comparisons=self.comparisons_in_order(),
            scores=self.scores,
            usage=usage,
            events=self.events,
            budget=budget.limits,
            spent=budget.spent,
            winner_id=self.winner_id,
            final_answer=self.final_answer,
            final_answer_is_postprocessed=self.postprocessed,
            error=self.error,
            written_at=self.now(),
            intervals=self.intervals,
        )

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
