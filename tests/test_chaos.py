"""The chaos suite (``benchmarks.chaos``): its smoke run end to end, and its parts directly.

The smoke run drives three worker processes and an embedded server through worker SIGKILLs, a
server restart and injected provider faults, and must find nothing lost; the direct tests show
each of its checks catches what it is there to catch, and the fault provider serves each fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.chaos import chaos_plan, provider_ports
from benchmarks.chaos_checks import (
    PAUSED,
    Disruption,
    Run,
    check_files,
    excused,
    lagging,
    overspent,
    recovery_times,
    unrecorded,
)
from benchmarks.chaos_provider import FAULT_KINDS, ChaosProvider, Exchange, FaultRates
from workflows.budget import BudgetLimits

ROOT = Path(__file__).parent.parent
NO_FAULTS: dict[str, Any] = {kind: 0.0 for kind in FAULT_KINDS}


@pytest.mark.slow  # started first: see tests/conftest.py
@pytest.mark.timeout(240)
async def test_the_smoke_run_loses_nothing_under_kills_restarts_and_faults(tmp_path: Path) -> None:
    # The command the README's reliability section names, in the mode it says the suite runs.
    readme = (ROOT / "README.md").read_text()
    named = re.search(r"`python (-m benchmarks\.chaos)` runs", readme)
    assert named and "`--smoke` mode" in readme, "the README names the chaos command"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PONDER_", "TEMPORAL_"))}
    env["PONDER_HOME"] = str(tmp_path / "unused")  # the run makes a home of its own in --home
    process = await asyncio.create_subprocess_exec(
        sys.executable, *named.group(1).split(), "--smoke", "--seed", "2",
        "--home", str(tmp_path), cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(process.communicate(), 200)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError("benchmarks.chaos --smoke did not finish within 200 s") from None
    text = out.decode(errors="replace")
    figures = json.loads(text.strip().splitlines()[-1])
    assert figures["failed_checks"] == [], text[-3000:]
    assert process.returncode == 0, text[-3000:]
    # Not vacuous: it ran calls through faults, killed workers and restarted the server.
    assert figures["runs"] == 3 and figures["calls"] >= 20
    assert figures["requests"] > figures["calls"]  # faults and kills made calls go again
    assert sum(figures["faults"].values()) > 0 and len(figures["faults"]) >= 3  # a mix
    assert 2 <= figures["kills"] <= 3 and figures["restarts"] == 1
    assert figures["recovery_s"]  # a kill cut calls in flight, and they were answered again
    assert figures["replayed"] >= 5  # the three runs and the campaign's two cells
    assert set(figures["states"]) <= {"completed", *PAUSED}
    # The run directories the checks read are there (not an empty pass).
    runs = {p.name for p in (tmp_path / "home" / "runs").iterdir()}
    assert {"t0", "p1", "c2"} <= runs


# -- the checks, directly ----------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_check_files_passes_whole_files_and_names_each_torn_or_repeated_one(
    tmp_path: Path,
) -> None:
    run = tmp_path / "t0"
    write_jsonl(run / "usage.jsonl", [{"usage_id": "t0/a/0/0"}, {"usage_id": "t0/a/1/0"}])
    (run / "summary.json").write_text('{"status": "completed"}')
    (run / "artifacts").mkdir()
    (run / "artifacts" / "winner.txt").write_text("answer")
    (run / ".write-order").write_text('["2026-01-01T00:00:00+00:00", 1]')
    assert check_files(tmp_path) == ([], [], 0)

    write_jsonl(run / "usage.jsonl", [{"usage_id": "t0/a/0/0"}, {"usage_id": "t0/a/0/0"}])
    write_jsonl(tmp_path / "p1" / "calls.jsonl", [{"invocation": "notes#1"}] * 2)
    (run / "summary.json").write_text('{"status": "compl')
    with (run / "events.jsonl").open("w") as f:
        f.write('{"seq": 1}\n{"seq": 2, "ty\n')
    (run / "artifacts" / "final.txt").write_text("")
    (run / ".summary.json.x1y2").write_text("{}")
    torn, repeated, temporary = check_files(tmp_path)
    assert torn == [
        "t0/artifacts/final.txt (empty)",
        "t0/events.jsonl (1 lines)",
        "t0/summary.json",
    ]
    assert repeated == ["p1/calls.jsonl: notes#1", "t0/usage.jsonl: t0/a/0/0"]
    assert temporary == 1


def test_overspent_holds_calls_exactly_and_usd_within_the_in_flight_window(
    tmp_path: Path,
) -> None:
    rows = [{"usage_id": f"t0/g/{i}/0", "usd": 0.001} for i in range(10)]
    write_jsonl(tmp_path / "t0" / "usage.jsonl", rows)
    (tmp_path / "p1").mkdir()
    (tmp_path / "p1" / "cost.json").write_text('{"calls": 7, "usd": 0.0}')
    runs = [
        Run("tournament", "t0", BudgetLimits(max_calls=10, max_usd=0.005)),
        Run("plan", "p1", BudgetLimits(max_calls=7)),
    ]
    # $0.010 against $0.005: within 8 calls of $0.001 in flight, as documented.
    assert overspent(tmp_path, runs) == []
    runs[0].limits = BudgetLimits(max_calls=9, max_usd=0.001)
    runs[1].limits = BudgetLimits(max_calls=6)
    assert overspent(tmp_path, runs) == [
        "t0: 10 calls, limit 9",
        "t0: $0.0100, limit $0.001 (+8 calls)",
        "p1: 7 calls, limit 6",
    ]


def test_unrecorded_names_a_tournament_whose_reserved_calls_lack_rows(tmp_path: Path) -> None:
    def progress(run: str, status: str, calls: int, in_flight: int) -> None:
        spent = {"calls": calls}
        document = {"progress": {"status": status, "spent": spent, "in_flight": in_flight}}
        (tmp_path / run).mkdir(exist_ok=True)
        (tmp_path / run / "progress.json").write_text(json.dumps(document))

    for run in ("t0", "t1", "t2"):
        write_jsonl(tmp_path / run / "usage.jsonl", [{"usage_id": f"{run}/{i}"} for i in range(5)])
    progress("t0", "completed", 5, 0)
    progress("t1", "awaiting_budget", 6, 1)  # paused with a call in flight: its row comes later
    progress("t2", "running", 6, 0)
    assert unrecorded(tmp_path) == ["t2: 6 calls, 5 rows, 0 in flight"]
    progress("t1", "completed", 6, 1)
    assert unrecorded(tmp_path) == [
        "t1: 6 calls, 5 rows, 1 in flight",
        "t2: 6 calls, 5 rows, 0 in flight",
    ]


def test_lagging_counts_the_calls_a_paused_run_has_not_written_yet(tmp_path: Path) -> None:
    for run in ("t0", "t1"):
        write_jsonl(tmp_path / run / "usage.jsonl", [{"usage_id": f"{run}/{i}"} for i in range(5)])
    runs = [
        Run("tournament", "t0", state="awaiting_budget", landed=6),
        Run("tournament", "t1", state="awaiting_budget", landed=5),
        Run("tournament", "t2", state="completed"),
    ]
    assert lagging(tmp_path, runs) == {"t0": 1}


def exchange(call: str, arrived: float, answered: float | None, port: int = 1) -> Exchange:
    return Exchange(call, port, None, arrived=arrived, answered=answered)


def test_a_call_answered_twice_is_excused_only_near_a_kill_or_restart() -> None:
    kill = Disruption("worker", at=100.0, until=100.0)
    restart = Disruption("server", at=200.0, until=210.0)
    in_flight = [exchange("a", 99.0, 99.5), exchange("a", 103.0, 103.2)]
    during_restart = [exchange("b", 205.0, 205.1), exchange("b", 212.0, 212.1)]
    unprovoked = [exchange("c", 150.0, 150.1), exchange("c", 151.0, 151.1)]
    assert excused(in_flight, [kill, restart])
    assert excused(during_restart, [kill, restart])
    assert not excused(unprovoked, [kill, restart])
    assert not excused(in_flight, [restart])


def test_recovery_is_the_time_until_every_call_the_killed_worker_had_is_answered_again() -> None:
    kill = Disruption("worker", at=10.0, until=10.0, ports={7, 8})
    exchanges = [
        exchange("a", 9.0, None, port=7),  # cut by the kill
        exchange("b", 9.5, 10.5, port=8),  # answered into a dead socket
        exchange("c", 9.5, 10.2, port=9),  # another worker's: not the kill's
        exchange("a", 13.0, 13.5),
        exchange("b", 14.0, None),  # a fault
        exchange("b", 15.0, 16.0),
    ]
    assert recovery_times(exchanges, [kill]) == [6.0]
    # A cut call never answered again: no figure for that kill (not a made-up one).
    assert recovery_times(exchanges[:4], [kill]) == []


def test_the_smoke_plan_kills_two_or_three_workers_and_restarts_the_server_once() -> None:
    for seed in range(200):
        events = chaos_plan(random.Random(seed), 10.0, (2.5, 4.0), 1, 3)
        kills = [at for at, what in events if what.startswith("worker:")]
        assert 2 <= len(kills) <= 3 and all(0 < at < 10 for at in kills)
        assert [what for _, what in events].count("server") == 1
        assert events == sorted(events)


# -- the fault provider ------------------------------------------------------------------------


def test_provider_ports_finds_a_process_connections_to_the_provider() -> None:
    provider = ChaosProvider(seed=1)
    try:
        with socket.create_connection(("127.0.0.1", provider.port)) as held:
            port = held.getsockname()[1]
            assert port in provider_ports(os.getpid(), provider.port)
            assert provider_ports(os.getpid(), provider.port + 1) == set()
        assert port not in provider_ports(os.getpid(), provider.port)
    finally:
        provider.close()


def test_fault_rates_draw_each_kind_at_its_rate() -> None:
    rates = FaultRates()
    rng = random.Random(0)
    drawn = [rates.draw(rng) for _ in range(20_000)]
    for kind in FAULT_KINDS:
        share = drawn.count(kind) / len(drawn)
        assert abs(share - getattr(rates, kind)) < 0.01, (kind, share)
    assert FaultRates(**NO_FAULTS).draw(rng) is None


async def post(client: httpx.AsyncClient, url: str, call_id: str) -> httpx.Response:
    return await client.post(
        f"{url}/chat/completions",
        json={"model": "default", "seed": 1, "messages": [{"role": "user", "content": "Hi"}]},
        headers={"x-ponder-call-id": call_id, "x-ponder-role": "generate"},
    )


@pytest.mark.parametrize("kind", FAULT_KINDS)
async def test_the_provider_serves_each_fault_then_clean_answers(kind: str) -> None:
    rates = FaultRates(**{**NO_FAULTS, kind: 1.0}, slow_s=0.5, max_faults_per_call=1)
    provider = ChaosProvider(seed=1, rates=rates)
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            started = time.monotonic()
            if kind == "reset":
                with pytest.raises(httpx.TransportError):
                    await post(client, provider.url, "r/generate/0/0")
            else:
                faulty = await post(client, provider.url, "r/generate/0/0")
                if kind == "rate_limited":
                    assert faulty.status_code == 429 and faulty.headers["retry-after"] == "1"
                elif kind == "server_error":
                    assert faulty.status_code in (500, 503)
                elif kind == "html":
                    assert faulty.status_code == 200 and faulty.text.startswith("<html>")
                elif kind == "truncated_json":
                    assert faulty.status_code == 200
                    with pytest.raises(ValueError):
                        faulty.json()
                else:  # slow_body: the whole answer, after the wait
                    assert time.monotonic() - started >= 0.5
                    assert faulty.json()["choices"][0]["message"]["content"]
            clean = await post(client, provider.url, "r/generate/0/0")
        assert clean.status_code == 200 and clean.json()["choices"][0]["message"]["content"]
        assert provider.faults == {kind: 1}
        answered = [e.answered is not None for e in provider.snapshot()]
        assert answered == [kind == "slow_body", True]
    finally:
        provider.close()


async def test_the_provider_draws_faults_by_call_not_by_arrival_order() -> None:
    ids = [f"r/generate/{i}/0" for i in range(40)]
    seen = []
    for order in (ids, list(reversed(ids))):
        provider = ChaosProvider(seed=5, rates=FaultRates(max_faults_per_call=9))
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                for call in order:
                    with contextlib.suppress(httpx.TransportError):  # a reset
                        await post(client, provider.url, call)
            seen.append(sorted((e.call_id, str(e.fault)) for e in provider.snapshot()))
        finally:
            provider.close()
    assert seen[0] == seen[1]
    assert any(fault != "None" for _, fault in seen[0])
