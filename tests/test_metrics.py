"""Prometheus metrics from a worker process (``--metrics-bind``): the SDK's own and ponder's,
scraped over real HTTP from a real ``python -m worker``, checked against the runs' own records;
a worker restarted mid-run replays without counting again; a taken or malformed address is
refused at start with a code."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError

from activities.config import Settings
from activities.ledger import draw_token
from activities.ledger_config import LedgerConfig
from activities.metrics import micro_usd
from client.ledgers import extend_ledger
from tests.fakes import FakeProvider, Reply
from tests.plans.run_helpers import agent, plan_doc, start, wait_state
from tests.test_ask import ask
from tests.test_readme import fenced, section
from tests.tournament.helpers import start as start_tournament
from tests.tournament.test_budget_control import wait_for_status as tournament_status
from tests.worker_process import declare_fake, start_worker, worker_env
from workflows.ask_types import AskInput
from workflows.budget import BudgetLimits
from workflows.call_options import CallOptions
from workflows.ledger.types import LedgerDraw
from workflows.names import ASK, TOURNAMENT, UPDATE_EXTEND_BUDGET, UPDATE_RESUME
from workflows.plan.run_types import PlanBudgetOverride, PlanRunResult, ResumeInput
from workflows.tournament.types import ExtendBudgetInput, ExtendBudgetResult

PRICES = '[prices."sim:default"]\ninput = 3.0\noutput = 15.0\n'
PAUSED = plan_doc(
    {"id": "ask", "kind": "pause", "pause": {"state": "AWAITING_NAME", "resume_arg": "name"}},
    agent("hello", "Hello ${input.name}."),
)
THREE = plan_doc(agent("a", "One."), agent("b", "Two.", deps=["a"]), agent("c", "Three."))
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a Prometheus text exposition: (name, labels, value)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, line
        name, labels, value = match.groups()
        out.append((name, dict(_LABEL.findall(labels or "")), float(value)))
    return out


def total(text: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when none)."""
    return sum(
        value
        for sample, have, value in samples(text)
        if sample == name and labels.items() <= have.items()
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MetricsWorker:
    """``python -m worker --metrics-bind 127.0.0.1:PORT`` on ``queue``."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process, self.url = process, url

    async def scrape(self) -> str:
        async with httpx.AsyncClient() as http:
            response = await http.get(self.url)
        response.raise_for_status()
        assert response.headers["content-type"].startswith("text/plain")
        return response.text

    async def serving(self) -> None:
        """Until the exporter answers (it listens before the worker connects); the ceiling
        is for a loaded machine, where a worker's imports alone have taken 20 s."""
        async with asyncio.timeout(90):
            while True:
                assert self.process.returncode is None, "the worker exited"
                try:
                    await self.scrape()
                    return
                except httpx.TransportError:
                    await asyncio.sleep(0.05)

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()


@asynccontextmanager
async def metrics_worker(
    settings: Settings, address: str, queue: str, path: str = "/metrics"
) -> AsyncIterator[MetricsWorker]:
    port = free_port()
    config = settings.home / "ponder.toml"
    if not config.exists():
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("")
    process = await start_worker(
        settings, address, queue, args=("--metrics-bind", f"127.0.0.1:{port}")
    )
    worker = MetricsWorker(process, f"http://127.0.0.1:{port}{path}")
    try:
        await worker.serving()
        yield worker
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await process.wait()


def test_spend_counts_whole_micro_usd() -> None:
    assert micro_usd(None) == 0
    assert micro_usd(0.0) == 0
    assert micro_usd(-1.0) == 0
    assert micro_usd(0.000_000_4) == 0
    assert micro_usd(0.000_000_6) == 1
    assert micro_usd(1.25) == 1_250_000


def test_samples_read_labels_and_values() -> None:
    text = (
        "# HELP x y\n"
        'ponder_model_calls{model="default",outcome="ok",provider="sim"} 2\n'
        'ponder_model_calls{model="other",outcome="ok",provider="sim"} 3\n'
        "temporal_worker_start 1\n"
    )
    assert total(text, "ponder_model_calls", provider="sim") == 5
    assert total(text, "ponder_model_calls", model="other") == 3
    assert total(text, "ponder_model_calls", provider="openai") == 0
    assert total(text, "temporal_worker_start") == 1


def documented_job() -> dict[str, Any]:
    """The Prometheus job docs/operating.md gives, as Prometheus reads it."""
    (block,) = fenced(section("## Metrics", page="docs/operating.md"), "yaml")
    (job,) = yaml.safe_load(block)["scrape_configs"]
    assert isinstance(job, dict)
    return job


async def test_the_scrape_job_reads_a_worker(
    client: Client, settings: Settings, server_address: str, fake: FakeProvider
) -> None:
    """The documented job's path on a worker started with ``--metrics-bind``: the SDK's
    metrics, and ponder's matching the runs' own summaries exactly."""
    job = documented_job()
    (targets,) = job["static_configs"]
    assert all(re.fullmatch(r"[\w.-]+:9464", t) for t in targets["targets"])
    declare_fake(settings, fake.url, "local")
    with (settings.home / "ponder.toml").open("a") as toml:
        toml.write(PRICES)
    # The fake's first call fails with a 500 (retried: a second attempt answers), its next
    # with a 400 (never retried: the run fails with its code).
    fake.replies = [Reply(status=500, body={"error": {"message": "busy"}})]
    queue = f"test-{uuid.uuid4()}"
    asks = [
        AskInput(question="What is 2+2?", seed=1),
        AskInput(question="Name a prime " * 40, seed=2),
        AskInput(question="Retried", model="local:m", seed=3),
    ]
    async with metrics_worker(settings, server_address, queue, job["metrics_path"]) as worker:
        results = [await ask(client, queue, payload) for payload in asks]
        fake.replies = [Reply(status=400, body={"error": {"message": "no such model"}})]
        with pytest.raises(WorkflowFailureError) as failed:
            await ask(client, queue, AskInput(question="Refused", model="local:m"))
        text = await worker.scrape()
    assert any(name.startswith("temporal_") for name, _, _ in samples(text))
    summaries = [
        json.loads((settings.runs_dir / r.run_id / "summary.json").read_text()) for r in results
    ]
    assert getattr(failed.value.cause, "type", None) == "provider.bad_request"
    local = {"provider": "local", "model": "m"}
    outcomes = {
        labels["outcome"]: value
        for name, labels, value in samples(text)
        if name == "ponder_model_calls" and labels.items() >= local.items()
    }
    # Every attempt under its outcome: the 500, its retry, the 400.
    assert outcomes == {"provider.transport": 1, "ok": 1, "provider.bad_request": 1}
    assert summaries[2]["transport_retries"] == 1
    assert (
        total(text, "ponder_model_input_tokens", **local) == (summaries[2]["usage"]["input_tokens"])
    )
    assert (
        total(text, "ponder_model_output_tokens", **local)
        == (summaries[2]["usage"]["output_tokens"])
    )
    summaries = summaries[:2]
    sim = {"provider": "sim", "model": "default"}
    assert total(text, "ponder_model_calls", outcome="ok", **sim) == 2
    assert total(text, "ponder_model_input_tokens", **sim) == sum(
        s["usage"]["input_tokens"] for s in summaries
    )
    assert total(text, "ponder_model_output_tokens", **sim) == sum(
        s["usage"]["output_tokens"] for s in summaries
    )
    assert all(s["usd"] > 0 for s in summaries)
    assert total(text, "ponder_model_spend_micro_usd", **sim) == sum(
        micro_usd(s["usd"]) for s in summaries
    )
    assert total(text, "ponder_model_call_latency_count", outcome="ok", **sim) == 2
    assert total(text, "ponder_runs_started", kind=ASK) == 4
    assert total(text, "ponder_runs_ended", kind=ASK, outcome="completed") == 3
    assert total(text, "ponder_runs_ended", kind=ASK, outcome="failed") == 1
    for name, labels, _ in samples(text):
        if name.startswith("ponder_"):
            assert not {"run_id", "workflow_id", "call_id"} & labels.keys(), (name, labels)


async def test_a_restarted_worker_replays_without_counting_the_run_again(
    client: Client, settings: Settings, server_address: str
) -> None:
    queue = f"test-{uuid.uuid4()}"
    plan = "PlanRun"
    async with metrics_worker(settings, server_address, queue) as first:
        handle = await start(client, queue, PAUSED)
        await wait_state(handle, "awaiting_input")
        before = await first.scrape()
        await first.kill()
    assert total(before, "ponder_runs_started", kind=plan) == 1
    assert total(before, "ponder_pauses_started", kind=plan, state="awaiting_input") == 1
    assert total(before, "ponder_pauses_ended", kind=plan) == 0
    async with metrics_worker(settings, server_address, queue) as second:
        # The new worker replays the whole history up to the pause before it takes the update.
        await handle.execute_update(UPDATE_RESUME, ResumeInput(args={"name": "Ada"}))
        result: PlanRunResult = await handle.result()
        # A run cancelled while it waits: its wait ends too.
        cancelled = await start(client, queue, PAUSED)
        await wait_state(cancelled, "awaiting_input")
        await cancelled.cancel()
        with pytest.raises(WorkflowFailureError) as ended:
            await cancelled.result()
        after = await second.scrape()
    assert isinstance(ended.value.cause, CancelledError), ended.value.cause
    assert "hello" in result.outputs
    # Only the second run's start and wait: the first one's were replayed, not counted again.
    assert total(after, "ponder_runs_started", kind=plan) == 1
    assert total(after, "ponder_pauses_started", kind=plan) == 1
    assert total(after, "ponder_pauses_ended", kind=plan, state="awaiting_input") == 2
    assert total(after, "ponder_runs_ended", kind=plan, outcome="completed") == 1
    assert total(after, "ponder_runs_ended", kind=plan, outcome="cancelled") == 1
    assert total(after, "ponder_runs_ended", kind=plan) == 2
    assert total(after, "ponder_model_calls", provider="sim", outcome="ok") == 1


async def test_budget_pauses_count_until_extended_or_cancelled(
    client: Client, settings: Settings, server_address: str
) -> None:
    """A tournament and a plan that stop on their budget: each pause counts once under
    ``awaiting_budget``, is not counted again by a worker that replays it, and ends with the
    extension, or with the run cancelled while it waits."""
    queue = f"test-{uuid.uuid4()}"
    tour, plan = TOURNAMENT, "PlanRun"
    budget = BudgetLimits(max_input_tokens=100)  # no preflight: the run starts, then stops
    async with metrics_worker(settings, server_address, queue) as first:
        extended = await start_tournament(client, queue, seed=4, budget=budget)
        cancelled = await start_tournament(client, queue, seed=5, budget=budget)
        planned = await start(client, queue, THREE, budget=PlanBudgetOverride(tokens=10))
        await tournament_status(extended, "awaiting_budget")
        await tournament_status(cancelled, "awaiting_budget")
        await wait_state(planned, "awaiting_budget")
        paused = await first.scrape()
        await first.kill()
    async with metrics_worker(settings, server_address, queue) as second:
        # Each update is taken by the new worker after it replays the run up to its pause.
        await extended.execute_update(
            UPDATE_EXTEND_BUDGET,
            ExtendBudgetInput(max_input_tokens=10_000_000),
            result_type=ExtendBudgetResult,
        )
        await planned.execute_update(UPDATE_EXTEND_BUDGET, {"tokens": 1_000_000})
        await cancelled.cancel()
        with pytest.raises(WorkflowFailureError) as ended:
            await cancelled.result()
        results = (await extended.result(), await planned.result())
        after = await second.scrape()
    assert isinstance(ended.value.cause, CancelledError), ended.value.cause
    assert results[0].status == "completed" and results[1].calls == 3
    state = {"state": "awaiting_budget"}
    assert total(paused, "ponder_pauses_started", kind=tour, **state) == 2
    assert total(paused, "ponder_pauses_ended", kind=tour, **state) == 0
    assert total(paused, "ponder_pauses_started", kind=plan, **state) == 1
    assert total(paused, "ponder_pauses_ended", kind=plan, **state) == 0
    # Replayed pauses are not counted again, and the extended runs never paused a second time.
    assert total(after, "ponder_pauses_started", kind=tour) == 0
    assert total(after, "ponder_pauses_started", kind=plan) == 0
    assert total(after, "ponder_pauses_ended", kind=tour, **state) == 2
    assert total(after, "ponder_pauses_ended", kind=plan, **state) == 1
    assert total(after, "ponder_pauses_ended") == 3  # under no other state


async def test_a_plan_paused_on_its_shared_ledger_counts_one_budget_pause(
    client: Client, settings: Settings, server_address: str
) -> None:
    name = f"t{uuid.uuid4().hex[:12]}"  # one ledger entity per test: they share the server
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(f"[ledgers.{name}]\ncalls = 12\nblock = 4\n")
    queue = f"test-{uuid.uuid4()}"
    on_queue = settings.model_copy(
        update={"task_queue": queue, "ledgers": {name: LedgerConfig(calls=12, block=4)}}
    )
    draw = CallOptions(ledger=LedgerDraw(name=name, token=draw_token(on_queue, name)))
    async with metrics_worker(settings, server_address, queue) as worker:
        await extend_ledger(client, on_queue, name, calls="2")  # room for two of three steps
        handle = await start(client, queue, THREE, calls=draw)
        paused = await wait_state(handle, "awaiting_budget")
        during = await worker.scrape()
        await extend_ledger(client, on_queue, name, calls="+10")
        result: PlanRunResult = await handle.result()
        after = await worker.scrape()
    assert paused.budget is not None and (paused.budget.need or "").startswith(f"ledger {name}")
    assert result.calls == 3
    state = {"kind": "PlanRun", "state": "awaiting_budget"}
    assert total(during, "ponder_pauses_started", **state) == 1
    assert total(during, "ponder_pauses_ended", **state) == 0
    assert total(after, "ponder_pauses_started", **state) == 1
    assert total(after, "ponder_pauses_ended", **state) == 1


async def refused(settings: Settings, address: str, *args: str) -> tuple[int, str]:
    """Run ``python *args`` to its end: its exit status and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env=worker_env(settings, address),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        _, err = await process.communicate()
    return int(process.returncode or 0), err.decode()


async def test_a_taken_or_malformed_metrics_address_refuses_the_worker(
    settings: Settings, server_address: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        settings.home.mkdir(parents=True, exist_ok=True)
        (settings.home / "ponder.toml").write_text("")
        from_file = settings.model_copy(update={"home": tmp_path / "from-file"})
        from_file.home.mkdir()
        (from_file.home / "ponder.toml").write_text(f'[ponder]\nmetrics_bind = "{bind}"\n')
        queue = ("--task-queue", f"test-{uuid.uuid4()}")
        # Both entry points (``ponder worker``, ``python -m worker``), the flag and the file.
        flag, toml, malformed, leaving = await asyncio.gather(
            refused(
                settings, server_address, "-m", "client", "worker", *queue, "--metrics-bind", bind
            ),
            refused(from_file, server_address, "-m", "worker", *queue),
            refused(
                settings, server_address, "-m", "worker", *queue, "--metrics-bind", "localhost:1"
            ),
            # The shape of the worker a command leaves behind: it serves, without metrics.
            refused(
                settings,
                server_address,
                *("-m", "client", "worker", *queue, "--exit-when-idle", "0.5"),
                *("--metrics-bind", bind),
            ),
        )
    for code, err in (flag, toml):
        assert code == 2, err
        assert "worker.metrics_bind_in_use" in err, err
        assert bind in err and "give each worker its own port" in err, err
        assert "ponder worker polling" not in err
    code, err = malformed
    assert code == 2, err
    assert "worker.metrics_bind_invalid" in err and "127.0.0.1:9464" in err, err
    code, err = leaving
    assert code == 0, err
    assert f"warning: worker.metrics_bind_in_use: --metrics-bind {bind}" in err, err
    assert "serving no metrics" in err and "ponder worker polling" in err, err
