"""Chaos: tournaments, gated plans and campaigns under faults and kills; nothing may be lost.

The topology ``docker-compose.yml`` describes, as processes on one machine: one dev server on a
persistent SQLite file (the embedded server, ``temporal.db`` in a fresh ``$PONDER_HOME``), three
``python -m worker`` processes on one task queue, and a provider that injects faults at seeded
rates (``benchmarks.chaos_provider``: 429 with ``Retry-After``, 5xx, truncated JSON, HTML, bodies
slower than the heartbeat timeout, connection resets). While runs go, a random worker is
SIGKILLed (and started again) every 5-15 s, and the server is SIGKILLed once or twice and
restarted on the same database. This process starts the runs and approves the plans' gates.

Then it checks, prints, and exits non-zero if any fails:

* every run completed or waits paused (for a budget, a gate, input); none failed or was lost;
* each call key is charged at most once (no repeated row in a run's ``usage.jsonl`` or
  ``calls.jsonl``), every call a tournament reserved has its row or is still in flight, and a
  call answered twice by the provider was in flight at a kill or restart (the one way a call
  may be paid twice);
* no run spent past any of its limits (calls exactly; USD within the in-flight window, since
  a call's price is known only when it lands);
* no torn artifact (every JSON file parses, every JSONL line parses, no repeated row, no empty
  answer file);
* every history replays under the current workflow code.

Figures: runs, model calls, faults injected by kind, calls answered twice, the time for the calls
a killed worker had in flight to be answered again, the time a restarted server takes to serve,
and the paused runs whose files do not hold yet a call that landed after the pause was written.

    python -m benchmarks.chaos [--seed 1] [--duration 180] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError
from temporalio.worker import Replayer

from activities.config import Settings, load_settings
from benchmarks.chaos_checks import (
    ANSWER_GRACE_S,
    PAUSED,
    Disruption,
    Run,
    answered_twice,
    check_files,
    excused,
    lagging,
    overspent,
    recovery_times,
    unrecorded,
)
from benchmarks.chaos_provider import FAULT_KINDS, ChaosProvider, Exchange, FaultRates
from client.connect import connect, data_converter
from client.embedded import EmbeddedServer, server_answers
from worker.worker import WORKFLOWS
from workflows.budget import BudgetLimits
from workflows.call_options import CallOptions
from workflows.model_types import Price
from workflows.names import (
    CAMPAIGN,
    PLAN_RUN,
    QUERY_PROGRESS,
    QUERY_STATUS,
    TOURNAMENT,
    UPDATE_RESOLVE_GATE,
)
from workflows.plan.run_types import PlanRunInput, PlanStatus, ResolveGateInput
from workflows.tournament.types import TournamentInput

T = TypeVar("T")

PROVIDER = "chaos"
MODEL = f"{PROVIDER}:default"
KEY_ENV = "PONDER_CHAOS_KEY"
"""The fake's API key variable: a campaign's preflight refuses an endpoint without one."""
HEARTBEAT_S = 2.0
"""The runs' heartbeat timeout: a killed worker's calls go to another worker within it."""
PRICE = Price(input=2.0, output=8.0)
"""USD per million tokens, so USD limits mean something."""
FIRST_CALL_S = 120.0
"""Three workers starting on a loaded 2-core machine take 5-25 s; past this, none works."""
RPC_TIMEOUT = timedelta(seconds=3)
"""For the driver's reads: a query waits for a worker, and the one it goes to may be dead."""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


# -- processes ---------------------------------------------------------------------------------


def provider_ports(pid: int, provider_port: int) -> set[int]:
    """The local ports of process ``pid``'s TCP connections to ``provider_port``: which
    requests the provider sees are that process's."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    ports = set()
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
            parts = line.split()
            if parts[9] in inodes and int(parts[2].split(":")[1], 16) == provider_port:
                ports.add(int(parts[1].split(":")[1], 16))
    return ports


class Workers:
    """``count`` ``python -m worker`` processes on one queue, as the compose file's workers,
    started again whenever one exits (its ``restart: unless-stopped``)."""

    def __init__(self, settings: Settings, address: str, queue: str, count: int) -> None:
        self.settings, self.address, self.queue = settings, address, queue
        self.processes: list[asyncio.subprocess.Process | None] = [None] * count
        self.exits = 0
        """Workers that exited on their own (not killed here) and were started again."""
        self._killed: set[int] = set()
        self._stopping = False

    async def supervise(self) -> None:
        """Start each worker, then start again any that exits, until ``stop()``."""
        for index in range(len(self.processes)):
            await self.start(index)
        while not self._stopping:
            for index, process in enumerate(self.processes):
                if process is not None and process.returncode is not None and not self._stopping:
                    if index not in self._killed:
                        self.exits += 1  # e.g. one that started while the server was down
                    self._killed.discard(index)
                    await self.start(index)
            await asyncio.sleep(0.2)

    async def start(self, index: int) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
        env |= {
            "TEMPORAL_ADDRESS": self.address,
            "PONDER_HOME": str(self.settings.home),
            KEY_ENV: "chaos",
        }
        log = (self.settings.home / f"worker-{index}.log").open("ab")
        with log:
            self.processes[index] = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "worker", "--task-queue", self.queue,
                "--sticky-timeout", "1", env=env, stdout=log, stderr=log,
            )  # fmt: skip

    async def kill(self, index: int, provider_port: int) -> set[int]:
        """SIGKILL worker ``index`` (``supervise`` starts it again); returns its connections
        to the provider at the kill."""
        process = self.processes[index]
        assert process is not None
        ports = provider_ports(process.pid, provider_port)
        self._killed.add(index)
        with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
            process.send_signal(signal.SIGKILL)
        await process.wait()
        return ports

    def busy(self, provider_port: int, in_flight: set[int]) -> list[int]:
        """The workers with a request in flight at the provider: one of their connections is
        among the client ports ``in_flight`` (an idle pooled connection is not a call)."""
        return [
            index
            for index, process in enumerate(self.processes)
            if process is not None
            and process.returncode is None
            and provider_ports(process.pid, provider_port) & in_flight
        ]

    async def stop(self, supervisor: asyncio.Task[None]) -> None:
        """Stop ``supervisor`` (``supervise()``), then every worker (SIGTERM)."""
        self._stopping = True
        with contextlib.suppress(Exception):
            await supervisor  # it ends its round first: no worker starts after this
        for process in self.processes:
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            if process is not None:
                try:
                    await asyncio.wait_for(process.wait(), 30)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def retrying(action: Callable[[], Awaitable[T]], deadline_s: float = 120) -> T:
    """``action``, again while the server is away (restarting) and answers with an RPC error."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return await action()
        except RPCError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


# -- the runs ----------------------------------------------------------------------------------


def gated_plan(number: int, calls_limit: int) -> dict[str, Any]:
    """Draft, a human gate the driver approves, then announce."""
    return {
        "schema": "ponder-plan/1",
        "name": f"chaos-release-{number}",
        "budget": {"calls": calls_limit},
        "max_rounds": 2,
        "steps": [
            {"id": "notes", "kind": "agent", "model": MODEL,
             "prompt": "Draft release notes for version ${input.version}."},
            {"id": "ship", "kind": "gate", "deps": ["notes"], "gate": {"on_revise": "notes"}},
            {"id": "announce", "kind": "agent", "deps": ["ship"], "model": MODEL,
             "prompt": "Announce the release. Notes: ${steps.notes.output}"},
        ],
    }  # fmt: skip


def small_campaign(number: int, seeds: int) -> dict[str, Any]:
    config = {"model": MODEL}
    return {
        "schema": "ponder-campaign/1",
        "campaign_id": f"chaos-{number}",
        "commit_sha": "chaos",
        "comparator": "single",
        "seeds": list(range(seeds)),
        "concurrency": 4,
        "min_pairs": 2,
        "variants": [
            {"id": "single", "kind": "single", "config": config},
            {"id": "deep", "kind": "tournament", "config": {**config, "profile": "quick"}},
        ],
        "scenarios": [{"id": "lis", "task": "Longest increasing subsequence in O(n log n).",
                       "scorer": {"kind": "sim_truth"}}],
        "budget": {"max_calls": 500},
        "calls": {"heartbeat_timeout_s": HEARTBEAT_S},
    }  # fmt: skip


class Driver:
    def __init__(self, client: Client, queue: str, rng: random.Random, seeds: int) -> None:
        self.client, self.queue, self.rng, self.seeds = client, queue, rng, seeds
        self.runs: list[Run] = []

    async def start(self, kind: str) -> Run:
        number = len(self.runs)
        calls = CallOptions(heartbeat_timeout_s=HEARTBEAT_S)
        task_timeout = timedelta(seconds=5)
        run: Run
        if kind == "tournament":
            # A third stop at a budget they cannot finish in, and wait paused there.
            tight = self.rng.random() < 1 / 3
            # A quick tournament: 15 calls, about $0.009 at PRICE.
            limits = BudgetLimits(max_calls=15, max_usd=0.004) if tight else BudgetLimits()
            run = Run(kind, f"t{number}", limits)
            arg: Any = TournamentInput(
                task=f"Sort a list in place, take {number}.", profile="quick", model=MODEL,
                seed=number, calls=calls, budget=limits, prices={MODEL: PRICE},
            )  # fmt: skip
            workflow = TOURNAMENT
        elif kind == "plan":
            run = Run(kind, f"p{number}", BudgetLimits(max_calls=6))
            arg = PlanRunInput(
                plan=gated_plan(number, 6), args={"version": str(number)}, calls=calls
            )
            workflow = PLAN_RUN
        else:
            run = Run(kind, f"c{number}", BudgetLimits(max_calls=500))
            arg, workflow = small_campaign(number, self.seeds), CAMPAIGN
        # Already started: an earlier attempt did it, and its answer was lost with the server.
        with contextlib.suppress(WorkflowAlreadyStartedError):
            await retrying(
                lambda: self.client.start_workflow(
                    workflow, arg, id=run.id, task_queue=self.queue, task_timeout=task_timeout
                )
            )
        self.runs.append(run)
        return run

    def handle(self, run: Run) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle(run.id)

    async def refresh(self, run: Run) -> None:
        """``run.state``: its closed status, or while it runs, what its own query says."""
        try:
            description = await self.handle(run).describe(rpc_timeout=RPC_TIMEOUT)
            status = description.status
            if status != WorkflowExecutionStatus.RUNNING:
                run.state = status.name.lower() if status else "unknown"
                if status == WorkflowExecutionStatus.FAILED:
                    try:
                        await self.handle(run).result()
                    except WorkflowFailureError as exc:
                        run.why = str(exc.cause)[:300]
                return
            if run.kind == "plan":
                plan = await self.handle(run).query(
                    QUERY_STATUS, result_type=PlanStatus, rpc_timeout=RPC_TIMEOUT
                )
                run.state = plan.state
                if plan.pending_gates and not run.gate_approved:
                    gate = plan.pending_gates[0]
                    decision = ResolveGateInput(
                        step=gate.step, decision="approve", token=gate.token
                    )
                    await self.handle(run).execute_update(
                        UPDATE_RESOLVE_GATE, decision, rpc_timeout=RPC_TIMEOUT
                    )
                    run.gate_approved = True
                    run.state = "running"
            else:
                progress = await self.handle(run).query(QUERY_PROGRESS, rpc_timeout=RPC_TIMEOUT)
                run.state = str(progress.get("status", "running"))
                if run.state in PAUSED and "spent" in progress:
                    run.landed = progress["spent"]["calls"] - progress.get("in_flight", 0)
        except Exception:  # the server restarting, a query no live worker answers: ask again
            pass

    def settled(self, run: Run) -> bool:
        return run.state not in ("running", "starting", "waiting_provider")

    async def refresh_all(self) -> None:
        await asyncio.gather(
            *(self.refresh(r) for r in self.runs if not self.settled(r) or r.state in PAUSED)
        )


# -- chaos -------------------------------------------------------------------------------------


class Chaos:
    def __init__(self, server: EmbeddedServer, workers: Workers, provider: ChaosProvider) -> None:
        self.server, self.workers, self.provider = server, workers, provider
        self.disruptions: list[Disruption] = []

    async def kill_worker(self, index: int, wait_busy_s: float) -> None:
        """SIGKILL a worker with calls in flight if one has some within ``wait_busy_s``
        (``index`` picks among them), else worker ``index``; then start it again."""
        deadline = time.monotonic() + wait_busy_s
        while not (busy := self._busy()) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if busy:
            index = busy[index % len(busy)]
        at = time.monotonic()
        ports = await self.workers.kill(index, self.provider.port)
        self.disruptions.append(Disruption("worker", at, at, ports))

    def _busy(self) -> list[int]:
        exchanges = self.provider.snapshot()
        waiting = {e.port for e in exchanges if e.answered is None and e.fault is None}
        return self.workers.busy(self.provider.port, waiting)

    async def restart_server(self) -> None:
        info = self.server.read_state()
        assert info is not None
        at = time.monotonic()
        os.killpg(info.pid, signal.SIGKILL)
        # The lease's watchdog starts it again on the same ports and database.
        while True:
            now = self.server.read_state()
            if now is not None and now.pid != info.pid and await server_answers(now.address):
                break
            await asyncio.sleep(0.1)
        back = time.monotonic()
        self.disruptions.append(Disruption("server", at, back + ANSWER_GRACE_S, back_s=back - at))

    async def run(self, plan: list[tuple[float, str]], started: float, wait_busy_s: float) -> None:
        """Each ``(offset, "worker:N" | "server")`` at ``started + offset``."""
        for offset, what in plan:
            await asyncio.sleep(max(0.0, started + offset - time.monotonic()))
            if what == "server":
                await self.restart_server()
            else:
                await self.kill_worker(int(what.split(":")[1]), wait_busy_s)


def chaos_plan(
    rng: random.Random, duration: float, gaps: tuple[float, float], restarts: int, workers: int
) -> list[tuple[float, str]]:
    """Worker kills ``gaps`` seconds apart and ``restarts`` server kills, within ``duration``."""
    events: list[tuple[float, str]] = []
    at = rng.uniform(*gaps)
    while at < duration:
        events.append((at, f"worker:{rng.randrange(workers)}"))
        at += rng.uniform(*gaps)
    for k in range(restarts):
        events.append((duration * (k + 1) / (restarts + 1) + rng.uniform(-1, 1), "server"))
    return sorted(events)


async def replay_all(client: Client, settings: Settings) -> tuple[int, list[str]]:
    """Every workflow on the server (campaign cells included), replayed: (count, failures)."""
    replayer = Replayer(workflows=WORKFLOWS, data_converter=data_converter(settings))
    count, failures = 0, []
    async for execution in client.list_workflows():
        history = await client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).fetch_history()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        count += 1
        if result.replay_failure is not None:
            failures.append(f"{execution.id}: {result.replay_failure}")
    return count, failures


# -- main --------------------------------------------------------------------------------------


@dataclass
class Options:
    seed: int
    duration: float
    smoke: bool
    workers: int = 3
    active: int = 4
    """Runs kept going at once (full mode)."""


def write_config(home: Path, provider: ChaosProvider) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    (home / "ponder.toml").write_text(
        f'[providers.{PROVIDER}]\nkind = "openai"\nbase_url = "{provider.url}"\n'
        f'api_key_env = "{KEY_ENV}"\nponder_headers = true\n'
    )
    os.environ[KEY_ENV] = "chaos"
    return load_settings(home=str(home))


async def drive(
    options: Options, driver: Driver, disruptor: Chaos, rng: random.Random
) -> dict[str, float]:
    """Start runs and disrupt for ``options.duration``, then wait for every run to settle;
    returns how long each phase took."""
    phases = {}
    if options.smoke:
        events = chaos_plan(rng, options.duration, (2.5, 4.0), 1, options.workers)
    else:
        restarts = rng.choice([1, 2])
        events = chaos_plan(rng, options.duration, (5.0, 15.0), restarts, options.workers)
    began = time.monotonic()
    for kind in ("tournament", "plan", "campaign"):
        await driver.start(kind)
    # The clock starts with the first model call: workers take seconds to start on a loaded
    # machine, and a kill before then would find nothing to interrupt.
    while not disruptor.provider.exchanges:
        if time.monotonic() - began > FIRST_CALL_S:
            raise RuntimeError(
                f"no model call within {FIRST_CALL_S:.0f} s of the first start: see the "
                "workers' logs (worker-N.log in the home; --home keeps it)"
            )
        await asyncio.sleep(0.1)
    clock = time.monotonic()
    phases["first call"] = clock - began
    # The smoke run's three runs are short: its kills wait for a worker with calls in flight.
    chaos_task = asyncio.create_task(disruptor.run(events, clock, 3.0 if options.smoke else 0.5))
    try:
        while time.monotonic() - clock < options.duration:
            await driver.refresh_all()
            active = [r for r in driver.runs if not driver.settled(r)]
            if not options.smoke and len(active) < options.active:
                await driver.start(rng.choices(["tournament", "plan", "campaign"], [5, 3, 2])[0])
                continue
            await asyncio.sleep(0.5)
        await chaos_task
    finally:
        chaos_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await chaos_task
    phases["chaos"] = time.monotonic() - clock
    settled = time.monotonic()
    settle_by = settled + (90 if options.smoke else 240)
    while time.monotonic() < settle_by:
        await driver.refresh_all()
        if all(driver.settled(r) for r in driver.runs):
            break
        await asyncio.sleep(0.5)
    phases["settle"] = time.monotonic() - settled
    return phases


@dataclass
class Outcome:
    runs: list[Run]
    exchanges: list[Exchange]
    disruptions: list[Disruption]
    faults: Counter[str]
    runs_dir: Path
    replayed: int
    replay_failures: list[str]
    phases: dict[str, float]
    worker_exits: int = 0


async def chaos(options: Options, home: Path) -> Outcome:
    rng = random.Random(options.seed)
    provider = ChaosProvider(options.seed, FaultRates(), latency_s=(0.1, 0.5))
    settings = write_config(home, provider)
    server = EmbeddedServer(home)
    queue = "chaos"
    # SIGTERM (a timeout, Ctrl-C's sibling) cancels the run, so the workers and the server stop.
    this = asyncio.current_task()
    assert this is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this.cancel)
    try:
        async with server.lease() as info:
            client = await connect(settings, info.address)
            workers = Workers(settings, info.address, queue, options.workers)
            driver = Driver(client, queue, rng, seeds=1 if options.smoke else 2)
            disruptor = Chaos(server, workers, provider)
            supervisor = asyncio.create_task(workers.supervise())
            try:
                phases = await drive(options, driver, disruptor, rng)
                replaying = time.monotonic()
                replayed, replay_failures = await replay_all(client, settings)
                phases["replay"] = time.monotonic() - replaying
            finally:
                await workers.stop(supervisor)
    finally:
        provider.close()
    return Outcome(
        driver.runs, provider.snapshot(), disruptor.disruptions, provider.faults,
        settings.runs_dir, replayed, replay_failures, phases, workers.exits,
    )  # fmt: skip


def report(options: Options, outcome: Outcome) -> list[Check]:
    """Print the figures and the checks; returns the checks."""
    runs, exchanges, disruptions, faults = (
        outcome.runs,
        outcome.exchanges,
        outcome.disruptions,
        outcome.faults,
    )
    lost = [
        f"{r.id} ({r.kind}): {r.state} {r.why}".strip()
        for r in runs
        if r.state != "completed" and r.state not in PAUSED
    ]
    torn, repeated_rows, temporary = check_files(outcome.runs_dir)
    over = overspent(outcome.runs_dir, runs)
    missing = unrecorded(outcome.runs_dir)
    twice = answered_twice(exchanges)
    unexcused = sorted(call for call, answers in twice.items() if not excused(answers, disruptions))
    calls = {e.call_id for e in exchanges}
    recoveries = recovery_times(exchanges, disruptions)
    kills = sum(d.kind == "worker" for d in disruptions)
    restarts = [d.back_s for d in disruptions if d.kind == "server" and d.back_s is not None]
    kinds = Counter(r.kind for r in runs)
    states = Counter(r.state for r in runs)
    mode = "smoke" if options.smoke else f"{options.duration:.0f} s of chaos"
    print(f"chaos, seed {options.seed}, {mode}, {options.workers} worker processes, one server")
    print(
        f"  runs            {len(runs)} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})"
        f": {', '.join(f'{n} {s}' for s, n in sorted(states.items()))}"
    )
    print(f"  model calls     {len(calls)} call keys, {len(exchanges)} requests")
    shown = ", ".join(f"{k} {faults[k]}" for k in FAULT_KINDS)
    print(f"  faults injected {sum(faults.values())}: {shown}")
    back = ", ".join(f"{s:.1f}" for s in restarts)
    print(
        f"  disruptions     {kills} worker SIGKILLs, {len(restarts)} server restarts ({back} s), "
        f"{outcome.worker_exits} workers exited on their own and were started again"
    )
    print(
        f"  answered twice  {len(twice)} calls, {len(twice) - len(unexcused)} of them in flight "
        "at a kill or restart"
    )
    if recoveries:
        print(
            f"  recovery        a killed worker's calls answered again in "
            f"{statistics.median(recoveries):.1f} s median, {max(recoveries):.1f} s max "
            f"({len(recoveries)} kills with calls in flight)"
        )
    paused = sum(r.state in PAUSED for r in runs)
    if lag := lagging(outcome.runs_dir, runs):
        # Not a check: a paused run's files are written once the calls in flight at the pause
        # have landed, so a run read just as its last call lands may not have written yet.
        print(
            f"  paused files    {len(lag)} of {paused} paused runs' files lack calls that "
            f"landed after the pause: {', '.join(f'{r} {n}' for r, n in sorted(lag.items()))}"
        )
    timing = ", ".join(f"{name} {s:.0f} s" for name, s in outcome.phases.items())
    print(f"  replayed        {outcome.replayed} histories; {temporary} leftover temporary files")
    print(f"  wall            {timing}")
    checks = [
        Check("every run completed or paused", not lost and bool(runs), "; ".join(lost[:10])),
        Check("each call key charged once", not repeated_rows, "; ".join(repeated_rows[:10])),
        Check("every charged call has its row", not missing, "; ".join(missing[:10])),
        Check("a call answered twice was in flight at a kill", not unexcused, ", ".join(unexcused)),
        Check("no spend past a limit", not over, "; ".join(over[:10])),
        Check("no torn artifact", not torn, "; ".join(torn[:10])),
        Check(
            "every history replays",
            not outcome.replay_failures and outcome.replayed > 0,
            "; ".join(outcome.replay_failures[:5]),
        ),
    ]
    for check in checks:
        detail = f": {check.detail}" if check.detail else ""
        print(f"  {'ok  ' if check.ok else 'FAIL'} {check.name}{detail}")
    figures = {
        "runs": len(runs), "calls": len(calls), "requests": len(exchanges),
        "faults": dict(faults), "kills": kills, "restarts": len(restarts),
        "answered_twice": len(twice), "recovery_s": sorted(round(r, 2) for r in recoveries),
        "server_back_s": [round(s, 2) for s in restarts], "replayed": outcome.replayed,
        "states": dict(states), "paused_lag": lag, "worker_exits": outcome.worker_exits,
        "failed_checks": [c.name for c in checks if not c.ok],
    }  # fmt: skip
    print(json.dumps(figures))
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of chaos")
    parser.add_argument("--smoke", action="store_true", help="three runs, ~20 s of chaos")
    parser.add_argument("--home", type=Path, help="keep the home (runs, logs, database) here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.duration = 10.0  # two or three kills, 2.5-4 s apart
    for name in [k for k in os.environ if k.startswith(("PONDER_", "TEMPORAL_"))]:
        del os.environ[name]  # a home and an embedded server of its own
    os.environ["PONDER_SERVER_IDLE_S"] = "0"  # its server stops with the run
    options = Options(args.seed, args.duration, args.smoke)
    with tempfile.TemporaryDirectory(prefix="ponder-chaos-") as tmp:
        outcome = asyncio.run(chaos(options, (args.home or Path(tmp)).absolute() / "home"))
        checks = report(options, outcome)
    return 0 if all(c.ok for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
