"""What durability costs a tournament: the real ``Tournament`` vs a bare workflow vs plain asyncio.

One fresh embedded server (its own SQLite file in a temporary ``$PONDER_HOME``), one process:

* **real** — the ``Tournament`` workflow, paper profile (285 calls), ``sim:default`` (zero
  latency), concurrency 8, on the worker ``worker.worker.running_worker`` builds.
* **bare** — a benchmark-only workflow defined here, on its own task queue and ``Worker`` (same
  client): trivial activities returning a short string in the tournament's phase sizes (20, then
  3 x (40 + 15), then 100), 8 at a time, each phase waiting for the previous one. Temporal's own
  cost per activity and per phase barrier, nothing of ponder's.
* **bare + commits** — the bare workflow plus the real one's *structure* between phases: a no-op
  activity wherever the real one writes its artifacts (9 per run) and a no-op local activity
  wherever it fits Bradley-Terry (4). Small payloads: what remains between this and the real
  run is ponder's own work (payload sizes, conversions, rendering), not the round trips.
* **plain** — the same algorithm without Temporal: the pure modules (``rng``, ``schedule``,
  ``prompts.render``, ``judge_parse``, ``bradley_terry.leaderboard``, ``selection``,
  ``critique``) and the sim provider's ``simulate()`` called directly, 8 at a time per phase.

Wall time is start-to-result, R repetitions each (interleaved), median and min. Then a breakdown
of one real run from its history (time per activity type, workflow-task time, payload sizes),
offline timings of the artifact writer and the snapshot conversion, and (``--cprofile``) a
cProfile of one more real run across the worker's threads. Measures, never asserts.

    python -m benchmarks.tournament_overhead [--repeat 3] [--cprofile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
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
    from temporalio.api.enums.v1 import EventType
    from temporalio.api.history.v1 import History
    from temporalio.client import Client, WorkflowHistory
    from temporalio.testing import ActivityEnvironment
    from temporalio.worker import Worker

    from activities.config import Settings, load_settings
    from activities.model_types import ModelRequest
    from activities.providers.sim import SimOptions, simulate
    from activities.run_store import RunStore
    from activities.tournament.artifacts import (
        WRITE_TOURNAMENT_ARTIFACTS,
        TournamentArtifactActivities,
        render_files,
    )
    from client.connect import connect
    from client.embedded import EmbeddedServer
    from worker.worker import WorkerOptions, running_worker
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
_REQUEST_ROLE = {"generate": "generate", "compare": "judge", "mutate": "mutate"}


# -- (a) the bare workflow ----------------------------------------------------------------------


@dataclass
class BareInput:
    phases: list[int]
    """Phase sizes, in order; ``kinds`` says which are judging phases."""
    kinds: list[str]
    concurrency: int = CONCURRENCY
    commits: bool = False
    """Mirror the real workflow's per-phase artifact writes and local Bradley-Terry fits."""


@activity.defn(name=TRIVIAL)
async def trivial(index: int) -> str:
    return f"answer {index}"


@activity.defn(name=COMMIT)
async def commit(phase: int) -> str:
    return f"/tmp/run/{phase}"


@activity.defn(name=FIT)
async def fit(phase: int) -> list[str]:
    return [f"c{i}" for i in range(3)]


@workflow.defn(name="BenchBareTournament")
class BareTournament:
    @workflow.run
    async def run(self, input: BareInput) -> int:
        gate = asyncio.Semaphore(input.concurrency)
        done = 0

        async def one(index: int) -> str:
            async with gate:
                return await workflow.execute_activity(
                    TRIVIAL, index, result_type=str, start_to_close_timeout=timedelta(minutes=1)
                )

        async def write(phase: int) -> None:
            await workflow.execute_activity(
                COMMIT, phase, result_type=str, start_to_close_timeout=timedelta(minutes=1)
            )

        for phase, (size, kind) in enumerate(zip(input.phases, input.kinds, strict=True)):
            await asyncio.gather(*(one(done + i) for i in range(size)))
            done += size
            if input.commits:
                if kind == "judge":
                    await workflow.execute_local_activity(
                        FIT,
                        phase,
                        result_type=list[str],
                        start_to_close_timeout=timedelta(minutes=1),
                    )
                await write(phase)
        if input.commits:
            await write(len(input.phases))  # the real run's final write in ``_end``
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
                lambda i=i, p=p, c=c: mutate(phase, g, i, p, c, critiques[p])  # type: ignore[misc]
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

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)


@dataclass
class RealRun:
    seconds: float
    result: TournamentResult
    history: WorkflowHistory
    payload_store_bytes: int


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _history_bytes(history: WorkflowHistory) -> int:
    return History(events=history.events).ByteSize()


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


async def run_bare(client: Client, queue: str, commits: bool) -> tuple[float, WorkflowHistory]:
    input = BareInput(
        phases=[size for _, size in PHASES], kinds=[kind for kind, _ in PHASES], commits=commits
    )
    run_id = f"bench-bare-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    handle = await client.start_workflow(
        "BenchBareTournament", input, id=run_id, task_queue=queue, result_type=int
    )
    await handle.result()
    seconds = time.perf_counter() - started
    return seconds, await handle.fetch_history()


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


def _seconds(ts: Any) -> float:
    return ts.seconds + ts.nanos / 1e9


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
    for ev in events:
        t = _seconds(ev.event_time)
        kind = ev.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = ev.activity_task_scheduled_event_attributes
            name = attrs.activity_type.name
            scheduled[ev.event_id] = (name, t)
            stats[name].count += 1
            stats[name].input_bytes += _payload_bytes(attrs.input)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = ev.activity_task_completed_event_attributes
            name, t0 = scheduled[attrs.scheduled_event_id]
            stats[name].seconds += t - t0
            stats[name].result_bytes += _payload_bytes(attrs.result)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            wft_scheduled[ev.event_id] = t
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            attrs = ev.workflow_task_started_event_attributes
            wft_started[ev.event_id] = t
            wft_wait += t - wft_scheduled.get(attrs.scheduled_event_id, t)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            attrs = ev.workflow_task_completed_event_attributes
            wft_run += t - wft_started.get(attrs.started_event_id, t)
            wft_count += 1
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            markers += 1
            marker_bytes += ev.ByteSize()
    span = _seconds(events[-1].event_time) - _seconds(events[0].event_time)
    return HistoryBreakdown(span, dict(stats), wft_count, wft_run, wft_wait, markers, marker_bytes)


async def snapshots(client: Client, history: WorkflowHistory) -> list[TournamentSnapshot]:
    """Every artifact snapshot the run sent, decoded (from the payload store when stored apart)."""
    found = []
    for ev in history.events:
        if ev.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        attrs = ev.activity_task_scheduled_event_attributes
        if attrs.activity_type.name == WRITE_TOURNAMENT_ARTIFACTS:
            (snap,) = await client.data_converter.decode(
                list(attrs.input.payloads), [TournamentSnapshot]
            )
            found.append(snap)
    return found


async def time_it(work: Callable[[], Awaitable[object]], times: int) -> float:
    """Median seconds of ``times`` runs of ``work``."""
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        await work()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


async def offline_timings(client: Client, run: RealRun, scratch: Path) -> list[tuple[str, str]]:
    """The pieces of a real run, timed outside Temporal on the run's own payloads."""
    snaps = await snapshots(client, run.history)
    rows: list[tuple[str, str]] = []
    sizes = [len(s.model_dump_json()) for s in snaps]
    rows.append(
        (
            "artifact snapshots per run",
            f"{len(snaps)}, JSON {sizes[0] / 1024:.0f} .. {sizes[-1] / 1024:.0f} KiB, "
            f"{sum(sizes) / 1024:.0f} KiB in all",
        )
    )
    last = snaps[-1]
    converter = client.data_converter
    encode = await time_it(lambda: converter.encode([last]), 5)
    payloads = await converter.encode([last])
    decode = await time_it(lambda: converter.decode(payloads, [TournamentSnapshot]), 5)
    rows.append(("encode / decode last snapshot", f"{encode * 1e3:.1f} / {decode * 1e3:.1f} ms"))
    model_dump = await time_it(lambda: asyncio.sleep(0, last.model_dump_json()), 5)
    rows.append(("  of which pydantic model_dump_json", f"{model_dump * 1e3:.1f} ms"))

    async def render_only() -> None:
        render_files(last)

    rows.append(("render_files (last snapshot)", f"{await time_it(render_only, 5) * 1e3:.1f} ms"))
    writer = TournamentArtifactActivities(RunStore(scratch))
    env = ActivityEnvironment()
    total = 0.0
    for snap in snaps:
        total += await time_it(
            lambda snap=snap: env.run(writer.write_tournament_artifacts, snap), 1
        )
    whole = await time_it(lambda: env.run(writer.write_tournament_artifacts, last), 3)
    rows.append(
        (
            "write_tournament_artifacts body",
            f"last {whole * 1e3:.1f} ms; all {len(snaps)} snapshots {total * 1e3:.0f} ms",
        )
    )
    outcomes = [
        Outcome(c.presented_a, c.presented_b, c.winner)
        for c in last.comparisons
        if c.phase == "final_judging"
    ]
    population = last.populations[max(last.populations)]

    async def bt() -> None:
        leaderboard(population, outcomes)

    rows.append(
        (f"leaderboard() on {len(outcomes)} outcomes", f"{await time_it(bt, 20) * 1e3:.2f} ms")
    )
    return rows


# -- cProfile across the worker's threads -------------------------------------------------------


class ThreadProfiles:
    """One ``cProfile.Profile`` per thread started while active (workflow tasks run on threads)."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self.main = cProfile.Profile()

    def _bootstrap(self, *_: object) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        self.profiles.append(profile)
        profile.enable()

    def __enter__(self) -> ThreadProfiles:
        threading.setprofile(self._bootstrap)
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


@dataclass
class Results:
    modes: list[Mode]
    real_runs: list[RealRun]
    plain_winners: list[str]
    breakdown: HistoryBreakdown
    bare_breakdown: HistoryBreakdown
    offline: list[tuple[str, str]]
    warm_up: dict[str, float]
    profile: str = ""


async def measure(home: Path, repeat: int, profile: bool) -> Results:
    settings = load_settings(home=str(home))
    print(f"starting an embedded Temporal server in {home} ...", flush=True)
    real = Mode("real Tournament (paper)")
    bare = Mode("bare workflow (calls only)")
    bare_commits = Mode("bare + phase commits")
    plain = Mode("plain asyncio loop")
    real_runs: list[RealRun] = []
    plain_winners: list[str] = []
    warm_up: dict[str, float] = {}
    bare_history: WorkflowHistory | None = None
    async with EmbeddedServer(home).lease() as info:
        client = await connect(settings, info.address)
        queue = f"bench-think-{uuid.uuid4().hex[:8]}"
        bare_queue = f"bench-bare-{uuid.uuid4().hex[:8]}"
        async with (
            running_worker(client, settings, WorkerOptions(task_queue=queue)),
            Worker(
                client,
                task_queue=bare_queue,
                workflows=[BareTournament],
                activities=[trivial, commit, fit],
                max_concurrent_activities=64,
            ),
        ):
            print("warm-up (not counted) ...", flush=True)
            warm_up["real"] = (await run_real(client, queue, settings, seed=999)).seconds
            warm_up["bare"] = (await run_bare(client, bare_queue, commits=True))[0]
            for r in range(repeat):
                print(f"repetition {r + 1}/{repeat} ...", flush=True)
                run = await run_real(client, queue, settings, seed=r)
                real_runs.append(run)
                real.seconds.append(run.seconds)
                real.events.append(len(run.history.events))
                real.history_bytes.append(_history_bytes(run.history))
                for mode, commits in ((bare, False), (bare_commits, True)):
                    seconds, history = await run_bare(client, bare_queue, commits)
                    mode.seconds.append(seconds)
                    mode.events.append(len(history.events))
                    mode.history_bytes.append(_history_bytes(history))
                    if not commits:
                        bare_history = history
                started = time.perf_counter()
                plain_run = await plain_tournament(TASK, seed=r)
                plain.seconds.append(time.perf_counter() - started)
                plain_winners.append(plain_run.winner_id)
            median_run = sorted(real_runs, key=lambda run: run.seconds)[len(real_runs) // 2]
            print("timing the pieces offline ...", flush=True)
            offline = await offline_timings(client, median_run, home / "scratch-runs")
            report = ""
            if profile:
                print("one more real run under cProfile ...", flush=True)
                with ThreadProfiles() as profiles:
                    profiled = await run_real(client, queue, settings, seed=0)
                offline.append(("real run under cProfile", f"{profiled.seconds:.2f} s"))
                report = profiles.report(25)
    assert bare_history is not None
    return Results(
        modes=[real, bare, bare_commits, plain],
        real_runs=real_runs,
        plain_winners=plain_winners,
        breakdown=breakdown(median_run.history),
        bare_breakdown=breakdown(bare_history),
        offline=offline,
        warm_up=warm_up,
        profile=report,
    )


def print_results(results: Results) -> None:
    real, bare, bare_commits, plain = results.modes
    print(
        f"\nTournament overhead: {PROFILE} profile, {CALLS} calls, {MODEL} (zero latency), "
        f"concurrency {CONCURRENCY}, {len(real.seconds)} runs each (interleaved)\n"
    )
    header = (
        f"{'mode':<28} {'median s':>9} {'min s':>7} {'calls/s':>8} {'x bare':>7} "
        f"{'x plain':>8} {'events':>7} {'hist KiB':>9}"
    )
    print(header)
    print("-" * len(header))
    for mode in results.modes:
        events = str(mode.events[0]) if mode.events else "-"
        kib = f"{mode.history_bytes[0] / 1024:.0f}" if mode.history_bytes else "-"
        print(
            f"{mode.name:<28} {mode.median:>9.3f} {mode.best:>7.3f} {CALLS / mode.median:>8.0f} "
            f"{mode.median / bare.median:>6.2f}x {mode.median / plain.median:>7.1f}x "
            f"{events:>7} {kib:>9}"
        )
    print(
        f"\nreal / bare          = {real.median / bare.median:.2f}x (median), "
        f"{real.best / bare.best:.2f}x (min)   goal: within 1.5x"
    )
    print(
        f"real / bare+commits  = {real.median / bare_commits.median:.2f}x (median), "
        f"{real.best / bare_commits.best:.2f}x (min)"
    )
    print(f"real / plain         = {real.median / plain.median:.0f}x (median)")
    print(
        f"warm-up (first run, not counted): real {results.warm_up['real']:.2f} s, "
        f"bare+commits {results.warm_up['bare']:.2f} s"
    )
    same = [
        run.result.winner_id == winner
        for run, winner in zip(results.real_runs, results.plain_winners, strict=True)
    ]
    print(
        f"plain loop picks the real run's winner: {sum(same)}/{len(same)} seeds; payload store "
        f"per real run: {statistics.median(r.payload_store_bytes for r in results.real_runs) / 1024:.0f} KiB"
    )

    for title, b in (
        ("real run (median)", results.breakdown),
        ("bare run (calls only)", results.bare_breakdown),
    ):
        print(
            f"\nfrom the history of one {title}: span {b.span:.2f} s; {b.workflow_tasks} "
            f"workflow tasks, {b.workflow_task_seconds:.2f} s running workflow code, "
            f"{b.workflow_task_queue_seconds:.2f} s waiting for pickup; {b.markers} local-activity "
            f"markers ({b.marker_bytes / 1024:.0f} KiB)"
        )
        print(
            f"  {'activity':<28} {'count':>5} {'sum sched->done s':>18} {'in KiB':>8} {'out KiB':>8}"
        )
        for name, s in sorted(b.activities.items()):
            print(
                f"  {name:<28} {s.count:>5} {s.seconds:>18.2f} {s.input_bytes / 1024:>8.0f} "
                f"{s.result_bytes / 1024:>8.0f}"
            )
    print("\noffline timings of the pieces (no server)")
    for what, value in results.offline:
        print(f"  {what:<38} {value}")
    if results.profile:
        print(results.profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (default 3)")
    parser.add_argument(
        "--cprofile", action="store_true", help="also profile one more real run with cProfile"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ponder-bench-") as tmp:
        results = asyncio.run(measure(Path(tmp), args.repeat, args.cprofile))
    print_results(results)


if __name__ == "__main__":
    main()
