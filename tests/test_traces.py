"""Traces (``otlp_endpoint``): a client and worker connected with tracing on put one run's
spans in one trace, from the client's start through the workflow to each model call; unset,
nothing is traced; set without the extra, a coded refusal."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities.config import Settings
from activities.errors import ConfigError
from client.api import Ponder
from client.session import Session
from worker import tracing
from worker.connect import connect
from worker.worker import WorkerOptions, running_worker
from workflows.ask import AskInput

# Never reached: the in-memory exporter registered for it takes the spans instead.
ENDPOINT = f"http://127.0.0.1:9/{uuid.uuid4()}/v1/traces"
EXPORTER = InMemorySpanExporter()


@pytest.fixture
async def traced(settings: Settings, server_address: str) -> AsyncIterator[Ponder]:
    """A worker and a client, both connected with tracing on, sharing the in-memory exporter."""
    tracing.tracer_provider(ENDPOINT, EXPORTER)
    queue = f"test-{uuid.uuid4()}"
    traced = settings.model_copy(update={"otlp_endpoint": ENDPOINT, "task_queue": queue})
    worker_client = await connect(traced, server_address)
    async with running_worker(worker_client, traced, WorkerOptions(task_queue=queue)):
        client = await connect(traced, server_address)
        yield Ponder(Session(client, traced, embedded=False))
    EXPORTER.clear()


def one_run(spans: Sequence[ReadableSpan], run_id: str) -> list[ReadableSpan]:
    """The spans of the trace the client's start of ``run_id`` opened, checking that every span
    naming the run is in it."""
    (start,) = [s for s in spans if s.name.startswith("StartWorkflow:") and _run(s) == run_id]
    assert start.parent is None  # the client's start is the root
    trace_id = start.context.trace_id
    mine = [s for s in spans if s.context.trace_id == trace_id]
    assert all(s.context.trace_id == trace_id for s in spans if _run(s) == run_id)
    by_id = {s.context.span_id: s for s in mine}
    for span in mine:  # each span hangs, through its parents, from the start
        node = span
        while node.parent is not None:
            node = by_id[node.parent.span_id]
        assert node is start
    return mine


def _run(span: ReadableSpan) -> object:
    return (span.attributes or {}).get("temporalWorkflowID")


async def test_an_ask_and_a_tournament_are_one_trace_each_with_their_calls(
    traced: Ponder,
) -> None:
    ask = await traced.ask(AskInput(question="Why is the sky blue?", model="sim:default"))
    await ask.result()
    tournament = await traced.tournament("Sort a list in place.", profile="quick", seed=3)
    ranked = await tournament.result()
    spans = EXPORTER.get_finished_spans()

    ask_spans = one_run(spans, ask.id)
    names = Counter(s.name.partition(":")[0] for s in ask_spans)
    assert names["RunWorkflow"] == 1
    calls = [s for s in ask_spans if s.name == "RunActivity:call_model"]
    assert len(calls) == 1  # an ask is one model call

    tournament_spans = one_run(spans, tournament.id)
    calls = [s for s in tournament_spans if s.name == "RunActivity:call_model"]
    assert len(calls) == ranked.spent.calls > 1
    # The two runs' traces are apart.
    ask_trace = ask_spans[0].context.trace_id
    assert ask_trace != tournament_spans[0].context.trace_id


def test_unset_endpoint_adds_no_interceptor(settings: Settings) -> None:
    assert settings.otlp_endpoint is None
    assert tracing.interceptors(settings) == []


def _exporter_installed() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(_exporter_installed(), reason="the OTLP exporter (ponder[otel]) is here")
async def test_an_endpoint_without_the_extra_is_refused_at_connect(
    settings: Settings, server_address: str, tmp_path: Path
) -> None:
    configured = settings.model_copy(update={"otlp_endpoint": f"http://127.0.0.1:9/{tmp_path}"})
    with pytest.raises(ConfigError) as refused:
        await connect(configured, server_address)
    assert refused.value.code == "telemetry.otel_missing"
    assert "pip install 'ponder[otel]'" in refused.value.message
    assert "otlp_endpoint" in refused.value.message


UNTRACED = """
import asyncio, sys
from activities.config import load_settings
from worker.connect import connect
from worker.worker import running_worker, WorkerOptions

async def main() -> None:
    settings = load_settings()
    client = await connect(settings, sys.argv[1])
    async with running_worker(client, settings, WorkerOptions(task_queue=sys.argv[2])):
        pass
    print(sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk")))

asyncio.run(main())
"""


async def test_unset_endpoint_never_imports_the_sdk(server_address: str, tmp_path: Path) -> None:
    env = {**os.environ, "PONDER_HOME": str(tmp_path / "home")}
    env.pop("PONDER_OTLP_ENDPOINT", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        UNTRACED,
        server_address,
        f"test-{uuid.uuid4()}",
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=Path(__file__).parent.parent,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0
    assert out.decode().strip() == "[]"
