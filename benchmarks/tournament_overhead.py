"""What durability costs a tournament: the real ``Tournament`` vs a bare workflow vs plain asyncio.

One fresh embedded server (its own SQLite file in a temporary ``$PONDER_HOME``), one process:

* **real** — the ``Tournament`` workflow, paper profile (285 calls), ``sim:default`` (zero
  latency), concurrency 8, on the worker ``worker.worker.running_worker`` builds.
* **bare** — a benchmark-only workflow defined here, on its own task queue and ``Worker`` (same
  client, and the real worker's workflow runner: unsandboxed unless the settings say otherwise;
  before 2026-12-02 the bare worker ran in Temporal's sandbox, a handicap of about 15%):
  trivial activities returning a short string in the tournament's phase sizes (20, then
  3 x (40 + 15), then 100), 8 at a time, each phase waiting for the previous one. Temporal's own
  cost per activity and per phase barrier, nothing of ponder's.
* **bare + phase commits** — the bare workflow plus the real one's *structure* between phases:
  a no-op local activity wherever it fits Bradley-Terry (4) or bootstraps the final ranking
  (1), and a no-op activity wherever it writes its artifacts (4: three started in the
  background once the next phase's first call has landed, the last one awaited), with tiny
  payloads. Not in the headline
  ratio (the real run's writes are part of what is measured), but it separates the cost of the
  round trips from ponder's own work.
* decomposition variants of the bare workflow (skip with ``--no-variants``): the commits with
  the real run's snapshot sizes, the same commits started in the task that ends a phase, calls
  through ponder's ``call_model`` (its activity options and body) with the real prompt sizes,
  and both together — payload sizes are taken from a warm-up real run. Three more bound what a
  call through ponder costs at the least: ``call_model`` with 10-character prompts (what the
  prompts' size costs), its activity options and payload types with no body at all (a
  stand-in registered under its name on a worker of its own, which also runs the bare workflow:
  what Temporal charges for them), and the trivial calls with its activity options alone.
* **plain** — the same algorithm without Temporal: the pure modules (``rng``, ``schedule``,
  ``prompts.render``, ``judge_parse``, ``bradley_terry.leaderboard``, ``selection``,
  ``critique``) and the sim provider's ``simulate()`` called directly, 8 at a time per phase.
  Same seeds as the real runs; it should name the same winners (printed, not asserted).

Wall time is start-to-result, R repetitions of every mode (interleaved), median and min. Then,
from the median run's history: workflow-task time, the stretches with no model call in flight
(between phases), time and payload bytes per activity type; offline timings of the pieces
(snapshot conversion, artifact writer, ``call_model`` body, Bradley-Terry); and with
``--cprofile`` a cProfile of one more real run (event loop and workflow threads); with
``--activation-phases`` the counted runs' workflow activations timed phase by phase (decode,
workflow code, encode, the server's answer: ``benchmarks/activation_phases.py``). Measures,
never asserts.

    python -m benchmarks.tournament_overhead [--repeat 3] [--no-variants] [--cprofile]
        [--activation-phases]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import dataclasses
import functools
import io
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import httpx
    from temporalio.api.enums.v1 import EventType
    from temporalio.api.history.v1 import History
    from temporalio.client import Client, WorkflowHistory
    from temporalio.testing import ActivityEnvironment
    from temporalio.worker import Worker

    from activities.call_model import CALL_MODEL, ModelActivities
    from activities.config import Settings, load_settings
    from activities.model_types import CallModelInput, ModelRequest, ModelResponse, Usage
    from activities.providers.sim import SimOptions, simulate
    from activities.run_store import RunStore
    from activities.tournament.artifacts import (
        WRITE_TOURNAMENT_ARTIFACTS,
        TournamentArtifactActivities,
        render_files,
        stacked,
    )
    from benchmarks.activation_phases import ActivationPhases
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from worker.worker import WorkerOptions, running_worker, workflow_runner
    from workflows.call_options import CallOptions
    from workflows.model_calls import MODEL_RETRY_POLICY, START_TO_CLOSE, call_model
    from workflows.names import TOURNAMENT
    from workflows.tournament import rng
    from workflows.tournament.bradley_terry import leaderboard
    from workflows.tournament.critique import aggregate_critiques
    from workflows.tournament.judge_parse import (
        JudgeParseError,
        JudgeVerdict,
        Outcome,
        parse_judge_output,
    )
    from workflows.tournament.profiles import get_profile
    from workflows.tournament.prompts import DEFAULT_RUBRIC, render
    from workflows.tournament.schedule import ScheduledPair, final_schedule, k_regular_schedule
    from workflows.tournament.selection import select
    from workflows.tournament.types import TournamentInput, TournamentResult, TournamentSnapshot

MODEL = "sim:default"
PROFILE = "paper"
CONCURRENCY = 8
TASK = "Write a function that returns the k-th smallest element of an unsorted list."
TRIVIAL = "bench_trivial"
COMMIT = "bench_commit"
FIT = "bench_fit"
# The paper profile's phases (n=20, k=4, t=3, m=10): kind and number of calls.
PHASES: list[tuple[str, int]] = [
    ("generate", 20),
    *[step for _ in range(3) for step in (("judge", 40), ("mutate", 15))],
    ("judge", 100),
]
CALLS = sum(size for _, size in PHASES)
CALL_TYPES = {CALL_MODEL, TRIVIAL}
GOAL = 1.15
"""The real run's median wall over the bare workflow's: printed as the last line."""
_REQUEST_ROLE = {"generate": "generate", "compare": "judge", "mutate": "mutate"}


# -- (a) the bare workflow ----------------------------------------------------------------------


@dataclass
class BareInput:
    run_id: str
    phases: list[int]
    """Phase sizes, in order; ``kinds`` names each phase (generate, judge, mutate)."""
    kinds: list[str]
    concurrency: int = CONCURRENCY
    commits: bool = False
    """Mirror the real workflow's structure between phases (lean, deferred writes): a local
    Bradley-Terry fit after every judging phase (4) and a local bootstrap after the last; an
    artifact write after each generation's fit (3), started in the background, and the run's
    last write (awaited) at the end: 4 writes, each waiting for the one before."""
    commit_chars: list[int] = field(default_factory=list)
    """Payload of each write (the real snapshots' sizes); empty: a few bytes."""
    commits_deferred: bool = True
    """Start a background write once a call of the next phase has landed, as the real run does
    (``DEFERRED_WRITES_PATCH``); False: in the task that ends the phase, as before it."""
    call_model: bool = False
    """Calls go through ponder's ``call_model`` (its activity options and body, sim provider)."""
    prompt_chars: dict[str, int] = field(default_factory=dict)
    """Prompt size per phase kind for ``call_model`` calls (the real prompts' mean sizes)."""
    call_options: bool = False
    """Trivial calls scheduled with ``call_model``'s activity options (its retry policy,
    timeouts, heartbeat timeout and summary) and none of its payload types or body."""


@activity.defn(name=TRIVIAL)
async def trivial(index: int) -> str:
    return f"answer {index}"


@activity.defn(name=COMMIT)
async def commit(payload: str) -> str:
    return f"/tmp/run/{len(payload)}"


@activity.defn(name=FIT)
async def fit(phase: int) -> list[str]:
    return [f"c{i}" for i in range(3)]


@activity.defn(name=CALL_MODEL)
async def call_model_without_body(input: CallModelInput) -> ModelResponse:
    """``call_model``'s name and payload types, and none of its work (no provider, raw event,
    redaction or pricing): an answer of a sim reply's shape."""
    return ModelResponse(
        text='{"winner": "A", "feedback_a": "ok", "feedback_b": "ok"}',
        model="default",
        provider="sim",
        usage=Usage(input_tokens=len(input.request.prompt) // 4, output_tokens=12),
        usd=0.0,
        simulated=True,
    )


@workflow.defn(name="BenchBareTournament")
class BareTournament:
    @workflow.run
    async def run(self, input: BareInput) -> int:
        gate = asyncio.Semaphore(input.concurrency)
        done = landed = writes = 0
        writing: asyncio.Task[str] | None = None

        async def one(kind: str, phase: int, index: int) -> str:
            nonlocal landed
            async with gate:
                if input.call_model:
                    request = ModelRequest(
                        model=MODEL,
                        prompt="x" * input.prompt_chars.get(kind, 100),
                        role={"judge": "judge"}.get(kind, "generate"),
                    )
                    call = CallModelInput(
                        run_id=input.run_id, phase=f"p{phase}", index=index, request=request
                    )
                    text = (await call_model(call, CallOptions())).text
                elif input.call_options:
                    role = {"judge": "judge"}.get(kind, "generate")
                    text = await workflow.execute_activity(
                        TRIVIAL,
                        index,
                        result_type=str,
                        start_to_close_timeout=START_TO_CLOSE,
                        schedule_to_close_timeout=CallOptions().schedule_to_close(role),
                        heartbeat_timeout=CallOptions().heartbeat_timeout(),
                        retry_policy=MODEL_RETRY_POLICY,
                        summary=f"p{phase}/{index}",
                    )
                else:
                    text = await workflow.execute_activity(
                        TRIVIAL,
                        index,
                        result_type=str,
                        start_to_close_timeout=timedelta(minutes=1),
                    )
                landed += 1
                return text

        async def send(chars: int, before: asyncio.Task[str] | None, mark: int | None) -> str:
            if before is not None:
                await before
            if mark is not None:  # deferred: once a call of the next phase has landed
                await workflow.wait_condition(lambda: landed > mark)
            return await workflow.execute_activity(
                COMMIT, "x" * chars, result_type=str, start_to_close_timeout=timedelta(minutes=1)
            )

        def write(*, last: bool = False) -> asyncio.Task[str]:
            nonlocal writes, writing
            chars = input.commit_chars[writes] if writes < len(input.commit_chars) else 0
            writes += 1
            mark = landed if input.commits_deferred and not last else None
            writing = asyncio.create_task(send(chars, writing, mark))
            return writing

        async def local(name: str, phase: int) -> None:
            await workflow.execute_local_activity(
                name, phase, result_type=list[str], start_to_close_timeout=timedelta(minutes=1)
            )

        last_phase = len(input.phases) - 1
        for phase, (size, kind) in enumerate(zip(input.phases, input.kinds, strict=True)):
            await asyncio.gather(*(one(kind, phase, i) for i in range(size)))
            done += size
            if input.commits and kind == "judge":
                await local(FIT, phase)
                if phase != last_phase:
                    write()  # the population it ranks goes with it, in the background
        if input.commits:
            await local(FIT, last_phase)  # the bootstrap's refits of the final ranking
            await write(last=True)  # the run's last write, in ``_end``
        return done


# -- (b) the plain asyncio loop ------------------------------------------------------------------


@dataclass(frozen=True)
class PlainComparison:
    presented_a: str
    presented_b: str
    winner: str
    critique_a: str
    critique_b: str


@dataclass
class PlainRun:
    winner_id: str
    calls: int


async def plain_tournament(task: str, seed: int, concurrency: int = CONCURRENCY) -> PlainRun:
    """The tournament's algorithm with no durability: pure modules + ``simulate()``."""
    profile = get_profile(PROFILE)
    temperatures = {
        "generate": profile.generate_temperature,
        "compare": profile.judge_temperature,
        "mutate": profile.mutate_temperature,
    }
    options = SimOptions.parse(MODEL.partition(":")[2])
    context = {"task": task, "rubric": DEFAULT_RUBRIC}
    texts: dict[str, str] = {}
    generation_of: dict[str, int] = {}
    calls = 0

    async def call(
        role: str, values: dict[str, str], phase: str, index: int, attempt: int, tag: str | None
    ) -> str:
        nonlocal calls
        prompt = render(role, values)  # type: ignore[arg-type]
        request = ModelRequest(
            model=MODEL,
            prompt=prompt.user,
            system=prompt.system,
            role=_REQUEST_ROLE[role],
            temperature=temperatures[role],
            max_output_tokens=prompt.max_output_tokens,
            json_mode=role == "compare",
            seed=seed,
            tag=tag,
        )
        calls += 1
        await asyncio.sleep(0)  # a real await point, as a provider call would have
        return simulate(request, seed, f"{phase}/{index}/{attempt}", options)

    async def bounded(jobs: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
        gate = asyncio.Semaphore(concurrency)

        async def guarded(job: Callable[[], Awaitable[Any]]) -> Any:
            async with gate:
                return await job()

        return await asyncio.gather(*(guarded(job) for job in jobs))

    async def generate(i: int, cid: str) -> None:
        texts[cid] = await call("generate", context, "initial_generation", i, 0, cid)
        generation_of[cid] = 0

    async def compare(phase: str, i: int, pair: ScheduledPair) -> PlainComparison:
        values = context | {
            "candidateA": texts[pair.presented_a],
            "candidateB": texts[pair.presented_b],
        }
        verdict: JudgeVerdict | None = None
        for attempt in range(2):  # invalid_json_retries = 1
            try:
                verdict = parse_judge_output(await call("compare", values, phase, i, attempt, None))
                break
            except JudgeParseError:
                continue
        if verdict is None:
            raise RuntimeError(f"{phase} pair {i}: no valid verdict")
        return PlainComparison(
            pair.presented_a,
            pair.presented_b,
            verdict.winner,
            verdict.feedback_a,
            verdict.feedback_b,
        )

    async def judge(
        phase: str, population: list[str], pairs: list[ScheduledPair]
    ) -> tuple[list[PlainComparison], list[str]]:
        rows = await bounded(
            [lambda i=i, p=p: compare(phase, i, p) for i, p in enumerate(pairs)]  # type: ignore[misc]
        )
        board = leaderboard(
            population,
            [Outcome(r.presented_a, r.presented_b, r.winner) for r in rows],
            lambda_=profile.lambda_,
            generations={cid: generation_of[cid] for cid in population},
        )
        return rows, [row.candidate_id for row in board]

    async def mutate(phase: str, g: int, i: int, parent: str, cid: str, critique: str) -> None:
        values = context | {"candidate": texts[parent], "critique": critique}
        texts[cid] = await call("mutate", values, phase, i, 0, cid)
        generation_of[cid] = g

    population = [rng.initial_id(i) for i in range(profile.n)]
    await bounded([lambda i=i, c=c: generate(i, c) for i, c in enumerate(population)])  # type: ignore[misc]
    for g in range(1, profile.t + 1):
        phase = f"generation_judging:{g}"
        pairs = k_regular_schedule(population, profile.k, rng.phase_rng(seed, phase))
        rows, ranked = await judge(phase, population, pairs)
        selection = select(ranked)
        elites = []
        for i, elite in enumerate(selection.elites):
            copy = rng.elite_id(g, i)
            texts[copy], generation_of[copy] = texts[elite], g
            elites.append(copy)
        critiques = aggregate_critiques(selection.parents, rows, critique_chars=16_000)
        mutants = [rng.mutant_id(g, i) for i in range(len(selection.parents))]
        phase = f"generation_mutation:{g}"
        await bounded(
            [
                lambda i=i, p=p, c=c, ph=phase, g=g, cr=critiques: mutate(ph, g, i, p, c, cr[p])  # type: ignore[misc]
                for i, (p, c) in enumerate(zip(selection.parents, mutants, strict=True))
            ]
        )
        population = elites + mutants
    pairs = final_schedule(population, m=profile.m, seed=seed)
    _rows, ranked = await judge("final_judging", population, pairs)
    return PlainRun(winner_id=ranked[0], calls=calls)


# -- measuring ----------------------------------------------------------------------------------


@dataclass
class Mode:
    name: str
    seconds: list[float] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    history_bytes: list[int] = field(default_factory=list)
    histories: list[WorkflowHistory] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    def add(self, seconds: float, history: WorkflowHistory | None = None) -> None:
        self.seconds.append(seconds)
        if history is not None:
            self.events.append(len(history.events))
            self.history_bytes.append(History(events=history.events).ByteSize())
            self.histories.append(history)

    def median_history(self) -> WorkflowHistory:
        """The history of the run with the median time."""
        order = sorted(range(len(self.seconds)), key=self.seconds.__getitem__)
        return self.histories[order[len(order) // 2]]


@dataclass
class RealRun:
    seconds: float
    result: TournamentResult
    history: WorkflowHistory
    payload_store_bytes: int


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


async def run_real(client: Client, queue: str, settings: Settings, seed: int) -> RealRun:
    run_id = f"bench-think-{uuid.uuid4().hex[:8]}"
    input = TournamentInput(task=TASK, profile=PROFILE, model=MODEL, seed=seed, run_id=run_id)
    stored = _dir_bytes(settings.payload_dir)
    started = time.perf_counter()
    handle = await client.start_workflow(
        TOURNAMENT, input, id=run_id, task_queue=queue, result_type=TournamentResult
    )
    result = await handle.result()
    seconds = time.perf_counter() - started
    history = await handle.fetch_history()
    return RealRun(seconds, result, history, _dir_bytes(settings.payload_dir) - stored)


async def run_bare(client: Client, queue: str, **options: Any) -> tuple[float, WorkflowHistory]:
    run_id = f"bench-bare-{uuid.uuid4().hex[:8]}"
    input = BareInput(
        run_id=run_id,
        phases=[size for _, size in PHASES],
        kinds=[kind for kind, _ in PHASES],
        **options,
    )
    started = time.perf_counter()
    handle = await client.start_workflow(
        "BenchBareTournament", input, id=run_id, task_queue=queue, result_type=int
    )
    await handle.result()
    seconds = time.perf_counter() - started
    return seconds, await handle.fetch_history()


# -- reading a history --------------------------------------------------------------------------


@dataclass
class ActivityStats:
    count: int = 0
    seconds: float = 0.0
    """Sum of scheduled -> completed."""
    input_bytes: int = 0
    result_bytes: int = 0


@dataclass
class HistoryBreakdown:
    span: float
    activities: dict[str, ActivityStats]
    workflow_tasks: int
    workflow_task_seconds: float
    """Sum of workflow task started -> completed: the worker running workflow code."""
    workflow_task_queue_seconds: float
    """Sum of workflow task scheduled -> started: waiting for a worker to pick it up."""
    markers: int
    marker_bytes: int
    between_phases: list[float]
    """Each stretch with no model call outstanding, from the last call done to the next call
    scheduled (the last one ends with the run): phase barriers with their fits and artifact
    writes, and the odd stall inside a phase when every call in flight landed at once."""


def _seconds(ts: Any) -> float:
    return float(ts.seconds + ts.nanos / 1e9)


def _payload_bytes(payloads: Any) -> int:
    return sum(p.ByteSize() for p in payloads.payloads)


def breakdown(history: WorkflowHistory) -> HistoryBreakdown:
    events = list(history.events)
    scheduled: dict[int, tuple[str, float]] = {}
    stats: dict[str, ActivityStats] = defaultdict(ActivityStats)
    wft_scheduled: dict[int, float] = {}
    wft_started: dict[int, float] = {}
    wft_run = wft_wait = 0.0
    wft_count = markers = marker_bytes = 0
    calls_out = 0
    idle_since: float | None = None
    between: list[float] = []
    for ev in events:
        t = _seconds(ev.event_time)
        kind = ev.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = ev.activity_task_scheduled_event_attributes
            name = attrs.activity_type.name
            scheduled[ev.event_id] = (name, t)
            stats[name].count += 1
            stats[name].input_bytes += _payload_bytes(attrs.input)
            if name in CALL_TYPES:
                calls_out += 1
                if idle_since is not None:
                    between.append(t - idle_since)
                    idle_since = None
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = ev.activity_task_completed_event_attributes
            name, t0 = scheduled[done.scheduled_event_id]
            stats[name].seconds += t - t0
            stats[name].result_bytes += _payload_bytes(done.result)
            if name in CALL_TYPES:
                calls_out -= 1
                if calls_out == 0:
                    idle_since = t
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            wft_scheduled[ev.event_id] = t
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            start = ev.workflow_task_started_event_attributes
            wft_started[ev.event_id] = t
            wft_wait += t - wft_scheduled.get(start.scheduled_event_id, t)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            end = ev.workflow_task_completed_event_attributes
            wft_run += t - wft_started.get(end.started_event_id, t)
            wft_count += 1
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            markers += 1
            marker_bytes += ev.ByteSize()
    last = _seconds(events[-1].event_time)
    if idle_since is not None:
        between.append(last - idle_since)
    return HistoryBreakdown(
        span=last - _seconds(events[0].event_time),
        activities=dict(stats),
        workflow_tasks=wft_count,
        workflow_task_seconds=wft_run,
        workflow_task_queue_seconds=wft_wait,
        markers=markers,
        marker_bytes=marker_bytes,
        between_phases=between,
    )


async def _scheduled_inputs(
    client: Client, history: WorkflowHistory, activity_name: str, type_hint: type
) -> list[Any]:
    """The decoded input of every ``activity_name`` the run scheduled (payload store included)."""
    found = []
    for ev in history.events:
        if ev.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = ev.activity_task_scheduled_event_attributes
        if attrs.activity_type.name == activity_name:
            (value,) = await client.data_converter.decode(list(attrs.input.payloads), [type_hint])
            found.append(value)
    return found


@dataclass
class RealShape:
    """Sizes taken from a real run, so the bare variants carry the same payloads."""

    snapshot_chars: list[int]
    prompt_chars: dict[str, int]


async def real_shape(client: Client, history: WorkflowHistory) -> RealShape:
    snaps = await _scheduled_inputs(client, history, WRITE_TOURNAMENT_ARTIFACTS, TournamentSnapshot)
    calls = await _scheduled_inputs(client, history, CALL_MODEL, CallModelInput)
    sizes: dict[str, list[int]] = defaultdict(list)
    for call in calls:
        kind = {"judge": "judge", "mutate": "mutate"}.get(call.request.role, "generate")
        sizes[kind].append(len(call.request.prompt) + len(call.request.system or ""))
    return RealShape(
        snapshot_chars=[len(snap.model_dump_json()) for snap in snaps],
        prompt_chars={kind: round(statistics.mean(v)) for kind, v in sizes.items()},
    )


# -- the pieces, timed offline ------------------------------------------------------------------


def _median_ms(work: Callable[[], object], times: int) -> float:
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1e3


async def _median_ms_async(work: Callable[[], Awaitable[object]], times: int) -> float:
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        await work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1e3


async def offline_timings(
    client: Client, settings: Settings, run: RealRun, scratch: Path
) -> list[tuple[str, str]]:
    """The pieces of a real run, timed outside Temporal on the run's own payloads."""
    snaps: list[TournamentSnapshot] = await _scheduled_inputs(
        client, run.history, WRITE_TOURNAMENT_ARTIFACTS, TournamentSnapshot
    )
    rows: list[tuple[str, str]] = []
    sizes = [len(s.model_dump_json()) for s in snaps]
    rows.append(
        (
            "artifact snapshots per run",
            f"{len(snaps)}, JSON {min(sizes) / 1024:.0f} .. {max(sizes) / 1024:.0f} KiB, "
            f"{sum(sizes) / 1024:.0f} KiB in all",
        )
    )
    last = snaps[-1]
    converter = client.data_converter
    encode = await _median_ms_async(lambda: converter.encode([last]), 5)
    payloads = await converter.encode([last])
    decode = await _median_ms_async(lambda: converter.decode(payloads, [TournamentSnapshot]), 5)
    rows.append(
        ("encode / decode the last snapshot", f"{encode:.1f} / {decode:.1f} ms (payload store)")
    )
    rows.append(("  of which model_dump_json", f"{_median_ms(last.model_dump_json, 5):.1f} ms"))
    whole_run = stacked(snaps)  # what the run directory holds at the end
    rows.append(
        ("render_files (whole run)", f"{_median_ms(lambda: render_files(whole_run), 5):.1f} ms")
    )
    writer = TournamentArtifactActivities(RunStore(scratch))
    env = ActivityEnvironment()
    # As scheduled by the recorded run: an activity writes only its workflow's run directory.
    env.info = dataclasses.replace(env.info, workflow_id=last.run_id)
    total = 0.0
    for snap in snaps:
        total += await _median_ms_async(
            functools.partial(env.run, writer.write_tournament_artifacts, snap), 1
        )
    whole = await _median_ms_async(lambda: env.run(writer.write_tournament_artifacts, last), 3)
    rows.append(
        (
            "write_tournament_artifacts body",
            f"last {whole:.1f} ms; all {len(snaps)} snapshots {total:.0f} ms",
        )
    )
    calls = await _scheduled_inputs(client, run.history, CALL_MODEL, CallModelInput)
    async with httpx.AsyncClient() as http:
        model = ModelActivities(settings, http)

        async def every_call() -> None:
            for call in calls:
                await env.run(model.call_model, call)

        body = await _median_ms_async(every_call, 3)
    rows.append(
        (
            f"call_model body x {len(calls)} (no server)",
            f"{body:.0f} ms ({body / len(calls) * 1e3:.0f} us a call)",
        )
    )

    outcomes = [
        Outcome(c.presented_a, c.presented_b, c.winner)
        for c in whole_run.comparisons
        if c.phase == "final_judging"
    ]
    population = whole_run.populations[max(whole_run.populations)]
    bt = _median_ms(lambda: leaderboard(population, outcomes), 20)
    rows.append((f"leaderboard() on {len(outcomes)} outcomes", f"{bt:.2f} ms"))
    return rows


# -- cProfile across the worker's threads -------------------------------------------------------


class ThreadProfiles:
    """cProfile of the event-loop thread, and one profile per thread started while active."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self.main = cProfile.Profile()

    def _bootstrap(self, *_: object) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        self.profiles.append(profile)
        profile.enable()

    def __enter__(self) -> ThreadProfiles:
        threading.setprofile(self._bootstrap)  # type: ignore[arg-type]
        self.main.enable()
        return self

    def __exit__(self, *_: object) -> None:
        self.main.disable()
        threading.setprofile(None)  # type: ignore[arg-type]

    def report(self, lines: int) -> str:
        out = io.StringIO()
        for title, profiles in (
            ("event-loop thread", [self.main]),
            ("other threads", self.profiles),
        ):
            if not profiles:
                continue
            stats = pstats.Stats(profiles[0], stream=out)
            for profile in profiles[1:]:
                stats.add(profile)
            out.write(f"\n--- cProfile, {title} ({len(profiles)}), by own time ---\n")
            stats.sort_stats("tottime").print_stats(lines)
        return out.getvalue()


# -- the benchmark ------------------------------------------------------------------------------

REAL = "real Tournament (paper)"
BARE = "bare workflow (calls only)"
COMMITS = "bare + phase commits"
PLAIN = "plain asyncio loop"


NO_BODY = "  call_model, no body, tiny prompts"
"""Runs on the worker whose ``call_model`` is ``call_model_without_body``."""


def variants(shape: RealShape) -> dict[str, dict[str, Any]]:
    """Bare-workflow modes: name -> ``BareInput`` options."""
    sized = {"commits": True, "commit_chars": shape.snapshot_chars}
    calls = {"call_model": True, "prompt_chars": shape.prompt_chars}
    tiny = {"call_model": True, "prompt_chars": dict.fromkeys(shape.prompt_chars, 10)}
    return {
        BARE: {},
        COMMITS: {"commits": True},
        "  commits, snapshot-sized": sized,
        "  commits, sized, at the barrier": sized | {"commits_deferred": False},
        "  trivial, call_model's options": {"call_options": True},
        NO_BODY: tiny,
        "  call_model, tiny prompts": tiny,
        "  call_model, real-size prompts": calls,
        "  call_model + sized commits": calls | sized,
    }


@dataclass
class Results:
    modes: dict[str, Mode]
    shape: RealShape
    real_runs: list[RealRun]
    plain_winners: list[str]
    breakdowns: dict[str, HistoryBreakdown]
    offline: list[tuple[str, str]]
    warm_up: dict[str, float]
    profile: str = ""
    activation_phases: str = ""


def _label(phases: ActivationPhases | None, mode: str) -> None:
    if phases is not None:
        phases.label = mode


async def measure(
    home: Path,
    repeat: int,
    all_variants: bool,
    profile: bool,
    warm: bool = True,
    phases: ActivationPhases | None = None,
) -> Results:
    """``warm``: one uncounted real and bare + commits run first (its payload sizes shape the
    variants, which therefore need it); ``--smoke`` skips it and takes the sizes it prints from
    the counted real run instead."""
    if all_variants and not warm:
        raise ValueError("the decomposition variants take their payload sizes from the warm-up")
    settings = load_settings(home=str(home))
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    modes: dict[str, Mode] = {}
    real_runs: list[RealRun] = []
    plain_winners: list[str] = []
    warm_up: dict[str, float] = {}
    report = ""
    async with EmbeddedServer(home).lease() as info, httpx.AsyncClient(timeout=None) as http:
        client = await connect(settings, info.address)
        queue = f"bench-think-{uuid.uuid4().hex[:8]}"
        bare_queue = f"bench-bare-{uuid.uuid4().hex[:8]}"
        no_body_queue = f"bench-no-body-{uuid.uuid4().hex[:8]}"
        async with (
            running_worker(client, settings, WorkerOptions(task_queue=queue)),
            Worker(
                client,
                task_queue=bare_queue,
                workflows=[BareTournament],
                activities=[trivial, commit, fit, ModelActivities(settings, http).call_model],
                max_concurrent_activities=64,
                # The real worker's runner (unsandboxed live): the sandbox's own cost per
                # activation is not ponder's overhead, nor is leaving it out a saving of ponder's.
                workflow_runner=workflow_runner(settings.workflow_sandbox),
            ),
            Worker(
                client,
                task_queue=no_body_queue,
                workflows=[BareTournament],
                activities=[trivial, commit, fit, call_model_without_body],
                max_concurrent_activities=64,
                workflow_runner=workflow_runner(settings.workflow_sandbox),
            ),
        ):
            shape: RealShape | None = None
            options: dict[str, dict[str, Any]] = {BARE: {}, COMMITS: {"commits": True}}
            if warm:
                print("warm-up (not counted) ...", flush=True)
                first = await run_real(client, queue, settings, seed=999)
                warm_up["real"] = first.seconds
                shape = await real_shape(client, first.history)
                if all_variants:
                    options = variants(shape)
                warm_up["bare"] = (await run_bare(client, bare_queue, **options[COMMITS]))[0]
                if NO_BODY in options:
                    await run_bare(client, no_body_queue, **options[NO_BODY])
            modes[REAL] = Mode(REAL)
            modes.update((name, Mode(name)) for name in options)
            modes[PLAIN] = Mode(PLAIN)
            with phases if phases is not None else contextlib.nullcontext():
                for r in range(repeat):
                    print(f"repetition {r + 1}/{repeat} ...", flush=True)
                    _label(phases, REAL)
                    run = await run_real(client, queue, settings, seed=r)
                    real_runs.append(run)
                    modes[REAL].add(run.seconds, run.history)
                    for name, option in options.items():
                        where = no_body_queue if name == NO_BODY else bare_queue
                        _label(phases, name)
                        seconds, history = await run_bare(client, where, **option)
                        modes[name].add(seconds, history)
                    started = time.perf_counter()
                    plain_run = await plain_tournament(TASK, seed=r)
                    modes[PLAIN].add(time.perf_counter() - started)
                    plain_winners.append(plain_run.winner_id)
            median_run = sorted(real_runs, key=lambda run: run.seconds)[len(real_runs) // 2]
            if shape is None:
                shape = await real_shape(client, median_run.history)
            print("timing the pieces offline ...", flush=True)
            offline = await offline_timings(client, settings, median_run, home / "scratch-runs")
        if profile:
            # A fresh worker, so the threads it runs workflow tasks on start under the profiler.
            print("one more real run under cProfile ...", flush=True)
            with ThreadProfiles() as profiles:
                async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
                    profiled = await run_real(client, queue, settings, seed=0)
            offline.append(("real run under cProfile", f"{profiled.seconds:.2f} s"))
            report = profiles.report(25)
    return Results(
        modes=modes,
        shape=shape,
        real_runs=real_runs,
        plain_winners=plain_winners,
        breakdowns={
            name: breakdown(modes[name].median_history()) for name in (REAL, BARE, COMMITS)
        },
        offline=offline,
        warm_up=warm_up,
        profile=report,
        activation_phases="" if phases is None else phases.table(dict.fromkeys(modes, repeat)),
    )


def print_results(results: Results) -> None:
    modes = results.modes
    real, bare, plain = modes[REAL], modes[BARE], modes[PLAIN]
    print(
        f"\nTournament overhead: {PROFILE} profile, {CALLS} calls, {MODEL} (zero latency), "
        f"concurrency {CONCURRENCY}, {len(real.seconds)} runs each (interleaved)\n"
    )
    header = (
        f"{'mode':<32} {'median s':>9} {'min s':>7} {'calls/s':>8} {'x bare':>7} "
        f"{'x plain':>8} {'events':>7} {'hist KiB':>9}"
    )
    print(header)
    print("-" * len(header))
    for mode in modes.values():
        events = str(round(statistics.median(mode.events))) if mode.events else "-"
        kib = f"{statistics.median(mode.history_bytes) / 1024:.0f}" if mode.history_bytes else "-"
        print(
            f"{mode.name:<32} {mode.median:>9.3f} {mode.best:>7.3f} {CALLS / mode.median:>8.0f} "
            f"{mode.median / bare.median:>6.2f}x {mode.median / plain.median:>7.0f}x "
            f"{events:>7} {kib:>9}"
        )
    print(
        f"\nreal / bare          = {real.median / bare.median:.2f}x median, "
        f"{real.best / bare.best:.2f}x min"
    )
    commits = modes[COMMITS]
    print(
        f"real / bare+commits  = {real.median / commits.median:.2f}x median, "
        f"{real.best / commits.best:.2f}x min"
    )
    print(f"real / plain         = {real.median / plain.median:.0f}x median")
    if results.warm_up:
        print(
            f"warm-up (first run of each, not counted): real {results.warm_up['real']:.2f} s, "
            f"bare + commits {results.warm_up['bare']:.2f} s"
        )
    else:
        print("warm-up: skipped (--smoke), so the first runs' start-up costs are in the figures")
    same = [
        run.result.winner_id == winner
        for run, winner in zip(results.real_runs, results.plain_winners, strict=True)
    ]
    stored = statistics.median(r.payload_store_bytes for r in results.real_runs)
    print(
        f"plain loop names the real run's winner: {sum(same)}/{len(same)} seeds; "
        f"payload store written per real run: {stored / 1024:.0f} KiB"
    )
    prompts = ", ".join(f"{k} {v}" for k, v in sorted(results.shape.prompt_chars.items()))
    print(f"real prompt sizes (mean chars): {prompts}")

    for title, b in results.breakdowns.items():
        gaps = b.between_phases
        print(
            f"\nhistory of the median {title.strip()} run: span {b.span:.2f} s; "
            f"{b.workflow_tasks} workflow tasks: {b.workflow_task_seconds:.2f} s started->completed"
            f" (one at a time), {b.workflow_task_queue_seconds:.2f} s scheduled->started; "
            f"{b.markers} local-activity markers ({b.marker_bytes / 1024:.0f} KiB)\n"
            f"  no call in flight (phase barriers, writes, stalls): {len(gaps)} stretches, "
            f"{sum(gaps):.2f} s, {statistics.mean(gaps) * 1e3:.0f} ms each"
        )
        columns = f"{'count':>5} {'sum sched->done s':>18} {'in KiB':>8} {'out KiB':>8}"
        print(f"  {'activity':<28} {columns}")
        for name, s in sorted(b.activities.items()):
            print(
                f"  {name:<28} {s.count:>5} {s.seconds:>18.2f} {s.input_bytes / 1024:>8.0f} "
                f"{s.result_bytes / 1024:>8.0f}"
            )
    print("\nthe pieces of the median real run, timed offline (no server)")
    for what, value in results.offline:
        print(f"  {what:<40} {value}")
    if results.activation_phases:
        print(
            "\nworkflow activations in this process, by phase "
            "(ms; see benchmarks/activation_phases.py)"
        )
        print(results.activation_phases)
    if results.profile:
        print(results.profile)
    ratio = real.median / bare.median
    print(
        f"\nreal / bare = {ratio:.2f}x median "
        f"(goal: <= {GOAL:.2f}x: {'met' if ratio <= GOAL else 'missed'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (default 3)")
    parser.add_argument(
        "--no-variants",
        action="store_true",
        help="only real, bare, bare + commits and plain (skip the decomposition variants)",
    )
    parser.add_argument(
        "--cprofile", action="store_true", help="also profile one more real run with cProfile"
    )
    parser.add_argument(
        "--activation-phases",
        action="store_true",
        help="also time each workflow activation's phases (decode, workflow code, encode, the "
        "server's answer) in the counted runs",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: a few seconds, for the test suite"
    )
    args = parser.parse_args()
    if args.smoke:  # the instrument runs too, so a new SDK that moves its hooks fails here
        args.repeat, args.no_variants, args.activation_phases = 1, True, True
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        results = asyncio.run(
            measure(
                Path(tmp),
                args.repeat,
                not args.no_variants,
                args.cprofile,
                warm=not args.smoke,
                phases=ActivationPhases() if args.activation_phases else None,
            )
        )
    print_results(results)


if __name__ == "__main__":
    main()
