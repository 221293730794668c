"""``Tournament``: the OpenDeepThink loop as a durable workflow.

    generate n -> for g in 1..t: judge (k-regular) + Bradley-Terry, keep elites, mutate parents
               -> final judging (m-regular or the rank block) -> optional finalizer

Every model call goes through ``TournamentCalls`` (reservation, billing, pause on budget);
phases run their calls with bounded concurrency and commit artifacts when they end.

Two paths through one loop, chosen once per run (``TournamentBehaviour``, with every other
behaviour its patches decide):

- **barrier** rounds (``rounds="barrier"``, the reference's schedule): each phase's calls all
  land (``_populate`` waits for them) before the next phase starts.
- **pipelined** rounds (the default): a population's ids are known before its texts are, so
  ``_populate`` returns at once, the next judging starts, and each pair waits only for its own
  two candidates (``_exist``); the fits, which need every comparison, stay barriers (``_made``
  completes the population first). Each role keeps its own concurrency within its provider's,
  so a judging phase runs beside the calls still making its candidates without a provider
  getting more calls at once than one phase sends it. Every call's key and output are the
  barrier run's, and rows are read back in schedule order, so the result is the barrier run's.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from workflows import phases
    from workflows.budget import BudgetLimits
    from workflows.completion import complete_despite_cancel
    from workflows.control_verbs import control_verb
    from workflows.inputs import InputInvalid
    from workflows.names import (
        QUERY_EVENTS,
        QUERY_PROGRESS,
        SIGNAL_EXTEND_BUDGET,
        SIGNAL_LEDGER_ROOM,
        TOURNAMENT,
        UPDATE_EXTEND_BUDGET,
    )
    from workflows.raw_input import NO_INPUT, decode_run_input, input_failure
    from workflows.run_refusals import RUN_STORE_REFUSALS, run_store_refusal
    from workflows.tournament import adaptive, rng
    from workflows.tournament.artifact_writes import ArtifactWriter
    from workflows.tournament.behaviour import TournamentBehaviour
    from workflows.tournament.calls import Dropped, Lane, TournamentCalls
    from workflows.tournament.critique import aggregate_critiques
    from workflows.tournament.errors import RUN_ID_INVALID, TournamentError
    from workflows.tournament.fits import adaptive_pairs, bootstrap_intervals, fit_leaderboard
    from workflows.tournament.judge_parse import JudgeParseError, parse_judge_output
    from workflows.tournament.panel import judge_by_panel
    from workflows.tournament.preflight import Preflight, preflight
    from workflows.tournament.profiles import adaptive_pairs_budget
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
_STAND_IN = TournamentInput.model_construct(task="")


@workflow.defn(name=TOURNAMENT)
class TournamentWorkflow:
    @workflow.init
    def __init__(self, raw: object = NO_INPUT, *extra: object) -> None:
        # Decoded here (never raising: that would fail the task forever), refused in run;
        # a stand-in input keeps the queries answering for a refused run.
        decoded = decode_run_input(TournamentInput, raw, extra)
        self.input_error = decoded if isinstance(decoded, InputInvalid) else None
        input = decoded if isinstance(decoded, TournamentInput) else _STAND_IN
        self.input = input
        self.run_id = workflow.info().workflow_id  # input.run_id, if given, is the same
        self.record = TournamentRecord(now=lambda: workflow.now().isoformat())
        self.calls = TournamentCalls(self.run_id, input, self.record.event)
        self.phase = phases.STARTING
        self.generation = 0
        self.plan: Preflight | None = None
        self.writer = ArtifactWriter(
            landed=lambda: len(self.calls.usage), in_flight=lambda: self.calls.in_flight
        )
        self.behaviour = TournamentBehaviour()
        """What this run's version does (its patches), decided in the first task of ``run``."""
        self.making: dict[str, asyncio.Task[None]] = {}
        """Pipelined: candidate id -> the call making it, for the population being made."""
        self.unmade: tuple[int, list[str], list[asyncio.Task[None]]] | None = None
        """Pipelined: the population (generation, ids) whose calls (tasks) may still run."""

    def _decide_behaviour(self) -> None:
        """Ask the run's patches, once, in its first workflow task: core answers ``patched``
        from the markers of the task it replays, and a call made after a local activity
        resolves can land in the task before the one whose completion recorded its marker (a
        replay of such a run failed "patch marker encountered ... no corresponding change
        command")."""
        self.behaviour = behaviour = TournamentBehaviour.decide(workflow.patched, self.input)
        self.input = input = behaviour.resolve(self.input)
        self.calls.balanced_panel = behaviour.balanced_panel
        if behaviour.throttled_writes:
            self.writer.interval = timedelta(seconds=input.write_interval_s)
            self.calls.on_pause = self._write_paused
        self.writer.incremental = behaviour.incremental_writes
        self.writer.deferred = behaviour.deferred_writes
        self.writer.settle_pauses = behaviour.settled_pause_writes
        if behaviour.pipelined:
            self.calls.pipeline(behaviour.slot_widths)

    # -- the loop ------------------------------------------------------------------------

    @workflow.run
    async def run(self, raw: object = NO_INPUT, *extra: object) -> TournamentResult:
        if self.input_error is not None:
            self.calls.status = "failed"
            self.record.error = f"{self.input_error.code}: {self.input_error.message}"
            self.record.event("run.failed", error=self.record.error)
            raise input_failure(self.input_error)
        self._decide_behaviour()
        input = self.input
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
                phase = phases.generation_judging(g)
                pairs = k_regular_schedule(population, profile.k, rng.phase_rng(seed, phase))
                board = await self._judge(phase, g, population, pairs)
                population = await self._mutate(g, board)
            phase = FINAL_JUDGING_PHASE
            pairs = final_schedule(population, m=profile.m, seed=seed, rank=input.rank)
            board = await self._judge(phase, None, population, pairs, adaptive=not input.rank)
            self.record.winner_id = board[0].candidate_id
            await self._score_intervals(population)
            await self._finalize(self.record.winner_id)
        except TournamentError as exc:
            await self._end("failed", f"{exc.code}: {exc.message}")
            raise ApplicationError(exc.message, type=exc.code, non_retryable=True) from None
        except ApplicationError as exc:
            await self._end("failed", f"{exc.type}: {exc.message}")
            raise
        except (asyncio.CancelledError, ActivityError) as exc:
            if (refused := run_store_refusal(exc)) is not None:
                raise refused from None  # coded like Ask's; no summary (it would be refused)
            # Cancelling while this task awaits an activity (a fit, a write, the finalizer)
            # arrives as an ActivityError whose cause is the cancellation.
            if not is_cancelled_exception(exc):
                raise
            await self._end("cancelled", None)
            raise asyncio.CancelledError() from None
        await complete_despite_cancel(self._end("completed", None))
        return TournamentResult(
            run_id=self.run_id,
            status="completed",
            winner_id=self.record.winner_id,
            final_answer=self.record.final_answer or "",
            leaderboard=self.record.leaderboard,
            spent=self.calls.budget.spent,
            run_dir=self.writer.run_dir,
            simulated=all(c.simulated for c in self.record.candidates.values()),
        )

    async def _initial_generation(self, n: int) -> list[str]:
        phase = self.phase = phases.INITIAL_GENERATION
        ids = [rng.initial_id(i) for i in range(n)]

        async def generate(i: int, cid: str) -> None:
            response = await self.calls.model(
                phase, i, role="generate", values=self._context(), tag=cid
            )
            self.record.add_candidate(cid, 0, "initial", None, "generated", response)

        making = {c: functools.partial(generate, i, c) for i, c in enumerate(ids)}
        return await self._populate(0, ids, making, "generate")

    async def _given_population(self) -> list[str]:
        self.phase = phases.INITIAL_GENERATION
        return await self._commit_population(0, self.record.add_given(self.input.candidates or []))

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
            budget = adaptive_pairs_budget(
                len(pairs), len(population), self.input.adaptive_pairs_share or 1.0
            )
            rows = await self._judge_adaptively(phase, generation, population, budget)
        else:
            rows = await self._judge_batch(phase, generation, pairs, first_index=0)
        await self._made()
        board = await self._fit(phase, generation, population, rows)
        # The final ranking is written by the run's last write, unless a finalizer call (a
        # model's time) comes between them.
        last = phase == FINAL_JUDGING_PHASE and not self.input.models.finalize
        if not (self.behaviour.lean_writes and last):
            await self._write_artifacts()
        return board

    async def _judge_batch(
        self, phase: str, generation: int | None, pairs: list[ScheduledPair], first_index: int
    ) -> list[ComparisonRow]:
        exist = self._exist if self.behaviour.pipelined else None
        if self.input.calls_per_pair > 1:  # both orders, or a panel: several calls per pair
            return await judge_by_panel(
                self.calls,
                self.record,
                self._context(),
                phase,
                generation,
                pairs,
                first_index,
                ready=exist,
            )
        return await self.calls.run_all(
            [
                functools.partial(self._compare, phase, generation, first_index + i, p)
                for i, p in enumerate(pairs)
            ],
            "judge",
            ready=[functools.partial(exist, p) for p in pairs] if exist else None,
        )

    async def _judge_adaptively(
        self, phase: str, generation: int | None, population: list[str], calls: int
    ) -> list[ComparisonRow]:
        """A random matching, then batches of the judge concurrency by champion pairs (runs
        started before that: a 2-regular round, then Thompson sampling; ``adaptive.py``)."""
        rows: list[ComparisonRow] = []
        sparse = self.behaviour.sparse_opening
        sizing = adaptive.opening_sizes if sparse else adaptive.batch_sizes
        sizes = sizing(len(population), calls, self.input.concurrency.judge)
        for round_no, size in enumerate(sizes):
            if round_no == 0:
                draw = adaptive.round_rng(self.calls.seed, phase, round_no)
                open_with = adaptive.opening if sparse else adaptive.first_round
                pairs = open_with(population, draw, budget=size)
            else:
                pairs = await adaptive_pairs(
                    population,
                    rows,
                    seed=self.calls.seed,
                    phase=phase,
                    round_no=round_no,
                    size=size,
                    rule="champion" if sparse else "thompson",
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
        return self.record.add_comparison(
            phase,
            generation,
            index,
            pair,
            judged.value,
            response=judged.response,
            attempts=judged.attempts,
            usage=judged.usage,
            raw_outputs=judged.raw_outputs if self.input.include_raw_outputs else None,
        )

    async def _mutate(self, g: int, board: list[ScoreRow]) -> list[str]:
        phase = self.phase = phases.generation_mutation(g)
        selection = select([row.candidate_id for row in board])
        self.record.discard(selection.discarded)
        elites = self.record.copy_elites(g, selection.elites)
        judged_here = self.record.comparisons_in_order(phases.generation_judging(g))
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

        making = {
            c: functools.partial(mutate, i, p, c)
            for i, (p, c) in enumerate(zip(selection.parents, mutants, strict=True))
        }
        return await self._populate(g, elites + mutants, making, "mutate")

    async def _finalize(self, winner_id: str) -> None:
        winner = self.record.candidates[winner_id]
        if not self.input.models.finalize:
            self.record.final_answer = winner.text
            return
        self.phase = phases.FINALIZING
        values = self._context() | {"candidate": winner.text}
        response = await self.calls.model(
            self.phase, 0, role="finalize", values=values, tag=winner_id
        )
        self.record.final_answer = response.text
        # "Post-processed" means the delivered text is not the winner's, not that a call ran.
        self.record.postprocessed = response.text != winner.text

    # -- helpers -------------------------------------------------------------------------

    def _context(self) -> dict[str, str]:
        return {"task": self.input.task, "rubric": self.input.rubric or DEFAULT_RUBRIC}

    async def _populate(
        self,
        generation: int,
        ids: list[str],
        making: Mapping[str, Callable[[], Awaitable[None]]],
        lane: Lane,
    ) -> list[str]:
        """Population ``generation`` is ``ids``, once the calls ``making`` its new candidates
        (by id) have landed. Pipelined, it returns at once: the next judging starts on the
        candidates that exist, and ``_made`` completes the population before it is ranked."""
        if not self.behaviour.pipelined:
            await self.calls.run_all(list(making.values()), lane)
            return await self._commit_population(generation, ids)
        tasks = self.calls.start_all(list(making.values()), lane)
        self.making = dict(zip(making, tasks, strict=True))
        self.unmade = (generation, ids, tasks)
        return ids

    async def _exist(self, pair: ScheduledPair) -> None:
        """Pipelined: wait until both candidates of ``pair`` exist (``Dropped`` if one never
        will: the call making it failed, and whoever settles that call raises its failure)."""
        makers = [t for c in (pair.presented_a, pair.presented_b) if (t := self.making.get(c))]
        if pending := [t for t in makers if not t.done()]:
            await workflow.wait(pending)
        if any(t.cancelled() or t.exception() is not None for t in makers):
            raise Dropped()

    async def _made(self) -> None:
        """Pipelined: the rest of the population being made lands, and it is committed (its
        file is written with the fit's artifacts)."""
        if self.unmade is None:
            return
        generation, ids, tasks = self.unmade
        self.unmade = None
        await self.calls.settle(tasks)
        self.making = {}
        self.record.commit_population(generation, ids)

    async def _commit_population(self, generation: int, ids: list[str]) -> list[str]:
        self.record.commit_population(generation, ids)
        if not self.behaviour.lean_writes:  # runs before the patch: a write of its own
            await self._write_artifacts()
        return ids

    async def _fit(
        self, phase: str, generation: int | None, population: list[str], rows: list[ComparisonRow]
    ) -> list[ScoreRow]:
        fitted = await fit_leaderboard(
            population,
            rows,
            lambda_=self.plan.profile.lambda_ if self.plan else 0.01,
            generations={cid: self.record.candidates[cid].generation for cid in population},
            lengths=self._lengths(population),
            length_model="mixture" if self.behaviour.mixture_length else "additive",
            weigh=self.input.weight_by_confidence,
        )
        return self.record.add_scores(phase, generation, fitted)

    async def _score_intervals(self, population: list[str]) -> None:
        """Bootstrap intervals on the final scores (resampled comparisons, refitted)."""
        resamples = self.input.bootstrap_resamples
        # A length-controlled run asks even without resamples: the activity reports the
        # length coefficient too.
        if not (resamples or self.input.length_control) or not self.behaviour.bootstrap:
            return
        self.record.intervals = await bootstrap_intervals(
            population,
            self.record.comparisons_in_order(FINAL_JUDGING_PHASE),
            lambda_=self.plan.profile.lambda_ if self.plan else 0.01,
            resamples=resamples,
            seed=rng.phase_seed(self.calls.seed, f"{FINAL_JUDGING_PHASE}:bootstrap") % 2**63,
            lengths=self._lengths(population),
            length_model="mixture" if self.behaviour.mixture_length else "additive",
            weigh=self.input.weight_by_confidence,
            intervals="likelihood" if self.behaviour.likelihood_intervals else "percentile",
        )

    def _lengths(self, population: list[str]) -> dict[str, int] | None:
        """Each candidate's length in characters, for a length-controlled fit (else None)."""
        if not self.input.length_control:
            return None
        return {cid: len(self.record.candidates[cid].text) for cid in population}

    async def _end(self, status: str, error: str | None) -> None:
        """Drain calls in flight, record the outcome and write the artifacts."""
        self.calls.stop()
        await self.calls.drain()
        self.calls.status = status  # type: ignore[assignment]
        self.record.error = error
        self.record.event(f"run.{status}", error=error)
        # No run directory for a bad id, nor for one the run store refused (the write would be
        # refused again, and the run must fail with the store's code, not the write's).
        code = (error or "").partition(":")[0]
        if code != RUN_ID_INVALID and code not in RUN_STORE_REFUSALS:
            await self._write_artifacts(wait=True)
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def _write_artifacts(self, *, wait: bool = False) -> None:
        await self.writer.write(self._snapshot, wait=wait)

    async def _write_paused(self) -> None:
        """A run that waits for a person shows where it stands in its files."""
        await self.writer.write(self._snapshot, always=True)

    def _snapshot(self) -> TournamentSnapshot:
        plan = self.plan
        # Each rendered prompt travels once; its file is content-addressed, so a rewrite is equal.
        prompts, self.calls.prompts = self.calls.prompts, {}
        snapshot = self.record.snapshot(
            run_id=self.run_id,
            status=self.calls.status,
            input=self.input,
            seed=self.calls.seed,
            profile=plan.profile if plan else None,
            profile_name=plan.profile_name if plan else None,
            usage=self.calls.usage,
            budget=self.calls.budget,
        )
        info = workflow.info()
        update: dict[str, object] = {
            "chain": info.first_execution_run_id,  # whose run directory it is
            "progress": self.progress(),
            "started_at": info.start_time.isoformat(),
        } | ({"prompts": prompts} if prompts else {})
        return snapshot.model_copy(update=update)

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
            blocking_limit=self.calls.budget.blocking_limit() or self.calls.ledger_room.blocking,
            error=self.record.error,
            in_flight=self.calls.in_flight,
            refused=self.record.refused[-5:],
            waiting_until=self.calls.waiting_until,
            waiting_code=self.calls.waiting_code,
            usd_known=all(row.priced for row in self.calls.usage),
        )

    @workflow.query(name=QUERY_EVENTS)
    def events_after(self, cursor: int) -> list[Event]:
        return [e for e in self.record.events if e.seq > cursor][:EVENTS_PAGE]

    def _extension(self, new: ExtendBudgetInput) -> tuple[BudgetLimits | None, list[str]]:
        """New limits, or why not (never raises: see budget.py)."""
        return self.calls.budget.checked_extension(new.model_dump())

    def _extend(self, limits: BudgetLimits) -> ExtendBudgetResult:
        self.calls.extend(limits)
        return ExtendBudgetResult(budget=self.calls.budget.limits, spent=self.calls.budget.spent)

    extend_budget, extend_budget_signal = control_verb(
        update=UPDATE_EXTEND_BUDGET,
        signal=SIGNAL_EXTEND_BUDGET,
        input=ExtendBudgetInput,
        check=_extension,
        apply=_extend,
    )

    @workflow.signal(name=SIGNAL_LEDGER_ROOM)
    def ledger_room(self, raw: RawValue = NO_INPUT) -> None:
        """The run's shared ledger has room again: calls waiting for it go on."""
        self.calls.ledger_room.room()

    def refuse_signal(self, signal: str, message: str) -> None:
        """A refused signal, its content or its arguments (``worker/arity``): recorded."""
        self.record.refused.append(message)
        self.record.event("control.refused", control=signal.removesuffix("_signal"), reason=message)
