"""``Tournament``: the OpenDeepThink loop as a durable workflow.

    generate n -> for g in 1..t: judge (k-regular) + Bradley-Terry, keep elites, mutate parents
               -> final judging (m-regular or the rank block) -> optional finalizer

Every model call goes through ``TournamentCalls`` (reservation, billing, pause on budget);
phases run their calls with bounded concurrency and commit artifacts when they end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from activities.model_types import Usage
    from activities.tournament.artifacts import WRITE_TOURNAMENT_ARTIFACTS
    from activities.tournament.fit import (
        ADAPTIVE_BATCH,
        FIT_LEADERBOARD,
        AdaptiveBatchInput,
        FitInput,
        FitOutcome,
    )
    from workflows.names import (
        QUERY_EVENTS,
        QUERY_PROGRESS,
        SIGNAL_EXTEND_BUDGET,
        TOURNAMENT,
        UPDATE_EXTEND_BUDGET,
    )
    from workflows.tournament import adaptive, rng
    from workflows.tournament.bradley_terry import LeaderboardRow
    from workflows.tournament.calls import TournamentCalls
    from workflows.tournament.critique import aggregate_critiques
    from workflows.tournament.errors import RUN_ID_INVALID, TournamentError
    from workflows.tournament.judge_parse import JudgeParseError, parse_judge_output
    from workflows.tournament.preflight import Preflight, preflight
    from workflows.tournament.prompts import DEFAULT_RUBRIC
    from workflows.tournament.record import TournamentRecord
    from workflows.tournament.schedule import (
        FINAL_JUDGING_PHASE,
        ScheduledPair,
        final_schedule,
        k_regular_schedule,
    )
    from workflows.tournament.selection import select
    from workflows.tournament.types import (
        CandidateRow,
        ComparisonRow,
        Event,
        ExtendBudgetInput,
        ExtendBudgetResult,
        Progress,
        ScoreRow,
        TournamentInput,
        TournamentResult,
        TournamentSnapshot,
    )

__all__ = ["TournamentWorkflow"]

EVENTS_PAGE = 500
# A bad path is a bug, not a passing fault: do not retry it forever.
ARTIFACT_RETRY_POLICY = RetryPolicy(maximum_attempts=10, non_retryable_error_types=["ValueError"])
FIT_RETRY_POLICY = RetryPolicy(maximum_attempts=3)


@workflow.defn(name=TOURNAMENT)
class TournamentWorkflow:
    @workflow.init
    def __init__(self, input: TournamentInput) -> None:
        self.input = input
        self.run_id = input.run_id or workflow.info().workflow_id
        self.record = TournamentRecord(now=lambda: workflow.now().isoformat())
        self.calls = TournamentCalls(self.run_id, input, self.record.event)
        self.phase = "starting"
        self.generation = 0
        self.error: str | None = None
        self.plan: Preflight | None = None
        self.winner_id: str | None = None
        self.final_answer: str | None = None
        self.postprocessed = False
        self.run_dir = ""
        self._pending_write: workflow.ActivityHandle[str] | None = None

    # -- the loop ------------------------------------------------------------------------

    @workflow.run
    async def run(self, input: TournamentInput) -> TournamentResult:
        seed = input.seed if input.seed is not None else workflow.random().randint(0, 2**31 - 1)
        self.calls.seed = seed
        try:
            self.plan = preflight(input, self.run_id)
            profile = self.plan.profile
            self.calls.temperatures = self.plan.temperatures
            self.record.event(
                "run.started", seed=seed, planned_calls=self.plan.tournament.planned_calls
            )
            if input.candidates is not None:
                population = await self._given_population()
            else:
                population = await self._initial_generation(profile.n)
            for g in range(1, profile.t + 1):
                self.generation = g
                phase = f"generation_judging:{g}"
                pairs = k_regular_schedule(population, profile.k, rng.phase_rng(seed, phase))
                board = await self._judge(phase, g, population, pairs)
                population = await self._mutate(g, board)
            phase = FINAL_JUDGING_PHASE
            pairs = final_schedule(population, m=profile.m, seed=seed, rank=input.rank)
            board = await self._judge(phase, None, population, pairs, adaptive=not input.rank)
            self.winner_id = board[0].candidate_id
            await self._finalize(self.winner_id)
        except TournamentError as exc:
            await self._end("failed", f"{exc.code}: {exc.message}")
            raise ApplicationError(exc.message, type=exc.code, non_retryable=True) from None
        except ApplicationError as exc:
            await self._end("failed", f"{exc.type}: {exc.message}")
            raise
        except (asyncio.CancelledError, ActivityError) as exc:
            # Cancelling while this task awaits an activity (a fit, a write, the finalizer)
            # arrives as an ActivityError whose cause is the cancellation.
            if not is_cancelled_exception(exc):
                raise
            await self._end("cancelled", None)
            raise asyncio.CancelledError() from None
        await self._end("completed", None)
        return TournamentResult(
            run_id=self.run_id,
            status="completed",
            winner_id=self.winner_id,
            final_answer=self.final_answer or "",
            leaderboard=self.record.leaderboard,
            spent=self.calls.budget.spent,
            run_dir=self.run_dir,
            simulated=all(c.simulated for c in self.record.candidates.values()),
        )

    async def _initial_generation(self, n: int) -> list[str]:
        self.phase = "initial_generation"
        ids = [rng.initial_id(i) for i in range(n)]

        async def generate(i: int, cid: str) -> None:
            response = await self.calls.model(
                self.phase, i, role="generate", values=self._context(), tag=cid
            )
            self.record.add_candidate(cid, 0, "initial", None, "generated", response)

        await self.calls.run_all(
            [functools.partial(generate, i, c) for i, c in enumerate(ids)],
            self.input.concurrency.generate,
        )
        return await self._commit_population(0, ids)

    async def _given_population(self) -> list[str]:
        self.phase = "initial_generation"
        for given in self.input.candidates or []:
            self.record.candidates[given.id] = CandidateRow(
                id=given.id,
                generation=0,
                kind="initial",
                status="generated",
                text=given.text,
                model="given",
                provider="given",
                usage=Usage(),
                created_at=workflow.now().isoformat(),
            )
        return await self._commit_population(0, [c.id for c in self.input.candidates or []])

    async def _judge(
        self,
        phase: str,
        generation: int | None,
        population: list[str],
        pairs: list[ScheduledPair],
        adaptive: bool = True,
    ) -> list[ScoreRow]:
        """Judge ``pairs`` (or, on the adaptive schedule, as many calls chosen in batches)."""
        self.phase = phase
        if self.input.schedule == "adaptive" and adaptive:
            rows = await self._judge_adaptively(phase, generation, population, len(pairs))
        else:
            rows = await self._judge_batch(phase, generation, pairs, first_index=0)
        board = await self._fit(phase, generation, population, rows)
        await self._write_artifacts()
        return board

    async def _judge_batch(
        self, phase: str, generation: int | None, pairs: list[ScheduledPair], first_index: int
    ) -> list[ComparisonRow]:
        return await self.calls.run_all(
            [
                functools.partial(self._compare, phase, generation, first_index + i, p)
                for i, p in enumerate(pairs)
            ],
            self.input.concurrency.judge,
        )

    async def _judge_adaptively(
        self, phase: str, generation: int | None, population: list[str], calls: int
    ) -> list[ComparisonRow]:
        """A random 2-regular round, then Thompson-sampled batches of the judge concurrency."""
        rows: list[ComparisonRow] = []
        sizes = adaptive.batch_sizes(len(population), calls, self.input.concurrency.judge)
        for round_no, size in enumerate(sizes):
            if round_no == 0:
                draw = adaptive.round_rng(self.calls.seed, phase, round_no)
                pairs = adaptive.first_round(population, draw, budget=size)
            else:
                pairs = await workflow.execute_local_activity(
                    ADAPTIVE_BATCH,
                    AdaptiveBatchInput(
                        candidate_ids=population,
                        outcomes=[_outcome(r) for r in rows],
                        seed=self.calls.seed,
                        phase=phase,
                        round_no=round_no,
                        size=size,
                    ),
                    result_type=list[ScheduledPair],
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=FIT_RETRY_POLICY,
                )
            if not pairs:
                break
            rows += await self._judge_batch(phase, generation, pairs, first_index=len(rows))
        return rows

    async def _compare(
        self, phase: str, generation: int | None, index: int, pair: ScheduledPair
    ) -> ComparisonRow:
        values = self._context() | {
            "candidateA": self.record.candidates[pair.presented_a].text,
            "candidateB": self.record.candidates[pair.presented_b].text,
        }
        judged = await self.calls.until_valid(
            phase, index, values=values, parse=parse_judge_output, errors=(JudgeParseError,)
        )
        verdict = judged.value
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
            model=judged.response.model,
            provider=judged.response.provider,
            attempts=judged.attempts,
            usage=judged.usage,
            raw_outputs=judged.raw_outputs if self.input.include_raw_outputs else None,
        )
        self.record.comparisons.append(row)  # recorded as it lands, so a cancel keeps it
        return row

    async def _mutate(self, g: int, board: list[ScoreRow]) -> list[str]:
        phase = self.phase = f"generation_mutation:{g}"
        selection = select([row.candidate_id for row in board])
        self.record.discard(selection.discarded)
        elites = self.record.copy_elites(g, selection.elites)
        judged_here = self.record.comparisons_in_order(f"generation_judging:{g}")
        critiques = aggregate_critiques(
            selection.parents, judged_here, critique_chars=self.input.critique_chars
        )
        mutants = [rng.mutant_id(g, i) for i in range(len(selection.parents))]

        async def mutate(i: int, parent: str, cid: str) -> None:
            values = self._context() | {
                "candidate": self.record.candidates[parent].text,
                "critique": critiques[parent],
            }
            response = await self.calls.model(phase, i, role="mutate", values=values, tag=cid)
            self.record.add_candidate(cid, g, "mutation", parent, "mutated", response)

        await self.calls.run_all(
            [
                functools.partial(mutate, i, p, c)
                for i, (p, c) in enumerate(zip(selection.parents, mutants, strict=True))
            ],
            self.input.concurrency.mutate,
        )
        return await self._commit_population(g, elites + mutants)

    async def _finalize(self, winner_id: str) -> None:
        winner = self.record.candidates[winner_id]
        if not self.input.models.finalize:
            self.final_answer = winner.text
            return
        self.phase = "finalizing"
        values = self._context() | {"candidate": winner.text}
        response = await self.calls.model(
            self.phase, 0, role="finalize", values=values, tag=winner_id
        )
        self.final_answer = response.text
        # "Post-processed" means the delivered text is not the winner's, not that a call ran.
        self.postprocessed = response.text != winner.text

    # -- helpers -------------------------------------------------------------------------

    def _context(self) -> dict[str, str]:
        return {"task": self.input.task, "rubric": self.input.rubric or DEFAULT_RUBRIC}

    async def _commit_population(self, generation: int, ids: list[str]) -> list[str]:
        self.record.commit_population(generation, ids)
        await self._write_artifacts()
        return ids

    async def _fit(
        self, phase: str, generation: int | None, population: list[str], rows: list[ComparisonRow]
    ) -> list[ScoreRow]:
        fitted = await workflow.execute_local_activity(
            FIT_LEADERBOARD,
            FitInput(
                candidate_ids=population,
                outcomes=[_outcome(r) for r in rows],
                lambda_=self.plan.profile.lambda_ if self.plan else 0.01,
                generations={cid: self.record.candidates[cid].generation for cid in population},
            ),
            result_type=list[LeaderboardRow],
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=FIT_RETRY_POLICY,
        )
        board = [
            ScoreRow(phase=phase, **(dataclasses.asdict(row) | {"generation": generation}))
            for row in fitted
        ]
        self.record.add_scores(board)
        return board

    async def _end(self, status: str, error: str | None) -> None:
        """Drain calls in flight, record the outcome and write the artifacts."""
        self.calls.stop()
        await self.calls.drain()
        self.calls.status = status  # type: ignore[assignment]
        self.error = error
        self.record.event(f"run.{status}", error=error)
        if not (error or "").startswith(RUN_ID_INVALID):  # no run directory for a bad id
            await self._write_artifacts(wait=True)
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _write_artifacts(self, *, wait: bool = False) -> None:
        """Commit the run directory; the next phase starts while the files are written.

        Writes stay in order (each waits for the one before), and the last one, in ``_end``,
        is waited for. Pydantic copies the state lists into the snapshot, so later phases
        cannot change what a pending write sends.
        """
        if self._pending_write is not None:
            try:
                self.run_dir = await self._pending_write
            except ActivityError as exc:
                # A write cancelled with the run is superseded by the one made here.
                if not (wait and is_cancelled_exception(exc)):
                    raise
            self._pending_write = None
        plan = self.plan
        # Each rendered prompt travels once; its file is content-addressed, so a rewrite is equal.
        prompts, self.calls.prompts = self.calls.prompts, {}
        snapshot = TournamentSnapshot(
            run_id=self.run_id,
            status=self.calls.status,
            input=self.input,
            seed=self.calls.seed,
            profile=plan.profile if plan else None,
            profile_name=plan.profile_name if plan else None,
            candidates=self.record.candidates_in_order(),
            populations=self.record.populations,
            comparisons=self.record.comparisons_in_order(),
            scores=self.record.scores,
            usage=self.calls.usage,
            events=self.record.events,
            budget=self.calls.budget.limits,
            spent=self.calls.budget.spent,
            winner_id=self.winner_id,
            final_answer=self.final_answer,
            final_answer_is_postprocessed=self.postprocessed,
            error=self.error,
            written_at=workflow.now().isoformat(),
            prompts=prompts,
        )
        self._pending_write = workflow.start_activity(
            WRITE_TOURNAMENT_ARTIFACTS,
            snapshot,
            result_type=str,
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=ARTIFACT_RETRY_POLICY,
        )
        if wait:
            self.run_dir = await self._pending_write
            self._pending_write = None

    # -- control -------------------------------------------------------------------------

    @workflow.query(name=QUERY_PROGRESS)
    def progress(self) -> Progress:
        return Progress(
            run_id=self.run_id,
            status=self.calls.status,
            phase=self.phase,
            generation=self.generation,
            calls_planned=self.plan.tournament.planned_calls if self.plan else 0,
            budget=self.calls.budget.limits,
            spent=self.calls.budget.spent,
            leaderboard=self.record.leaderboard[:5],
            blocking_limit=self.calls.budget.blocking_limit(),
            error=self.error,
            in_flight=self.calls.in_flight,
            refused=self.record.refused[-5:],
            usd_known=all(row.priced for row in self.calls.usage),
        )

    @workflow.query(name=QUERY_EVENTS)
    def events_after(self, cursor: int) -> list[Event]:
        return [e for e in self.record.events if e.seq > cursor][:EVENTS_PAGE]

    @workflow.update(name=UPDATE_EXTEND_BUDGET)
    def extend_budget(self, new: ExtendBudgetInput) -> ExtendBudgetResult:
        limits, _ = self.calls.budget.checked_extension(new.model_dump())
        assert limits is not None  # the validator refused anything else
        self.calls.extend(limits)
        return ExtendBudgetResult(budget=self.calls.budget.limits, spent=self.calls.budget.spent)

    @extend_budget.validator
    def _check_extension(self, new: ExtendBudgetInput) -> None:
        _, problems = self.calls.budget.checked_extension(new.model_dump())
        if problems:
            raise ValueError("; ".join(problems))

    @workflow.signal(name=SIGNAL_EXTEND_BUDGET)
    def extend_budget_signal(self, new: ExtendBudgetInput) -> None:
        limits, problems = self.calls.budget.checked_extension(new.model_dump())
        if limits is None:
            self.record.refused.append("; ".join(problems))
            self.record.event(
                "control.refused", control="extend_budget", reason="; ".join(problems)
            )
            return
        self.calls.extend(limits)


def _outcome(row: ComparisonRow) -> FitOutcome:
    return FitOutcome(presented_a=row.presented_a, presented_b=row.presented_b, winner=row.winner)
