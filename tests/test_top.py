"""``ponder top``: the frame's arithmetic by hand (``client.top_frame``), and the command's
``--once --json`` frame against real sim runs on the dev server, a plan paused for a person,
a queue nobody polls and a Prometheus endpoint served over real HTTP."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from temporalio.client import Client

from activities.config import Settings
from client.top_frame import (
    Pause,
    ProviderRate,
    Scrape,
    oldest_pause,
    open_waits,
    provider_rates,
    provider_totals,
    queue_literal,
    runs_by_state,
)
from tests.cli import cli_env, ponder
from tests.plans.run_helpers import agent, plan_doc, start, wait_state
from tests.test_ask import ask
from workflows.ask_types import AskInput
from workflows.names import ASK

# -- the frame's arithmetic -------------------------------------------------------------------


def test_runs_are_counted_by_state_then_kind() -> None:
    rows = [
        ("ask", "completed"),
        ("plan", "paused"),
        ("ask", "completed"),
        ("tournament", "running"),
        ("plan", "completed"),
        ("ask", "failed"),
    ]
    assert runs_by_state(rows) == {
        "completed": {"ask": 2, "plan": 1},
        "failed": {"ask": 1},
        "paused": {"plan": 1},
        "running": {"tournament": 1},
    }
    assert runs_by_state([]) == {}


EXPOSITION = """\
# HELP ponder_model_calls Model call attempts, by outcome (ok or the error code)
# TYPE ponder_model_calls counter
ponder_model_calls{model="default",outcome="ok",provider="sim",service_name="temporal-core-sdk"} 7
ponder_model_calls{model="other",outcome="ok",provider="sim"} 3
ponder_model_calls{model="gpt",outcome="provider.rate_limited",provider="openai"} 2
ponder_model_calls{model="gpt",outcome="ok",provider="openai"} 5
ponder_model_spend_micro_usd{model="gpt",provider="openai"} 1500000
ponder_model_input_tokens{model="gpt",provider="openai"} 999
ponder_model_calls{model="x"} 4
temporal_worker_start 1
not a sample line
ponder_model_calls{provider="bad"} NaN
"""


def test_provider_totals_sum_every_model_and_outcome() -> None:
    # sim: 7 + 3 calls, no spend; openai: 2 + 5 calls and 1.5 USD; a sample without a provider,
    # a NaN and other metrics count nothing.
    assert provider_totals(EXPOSITION) == {"sim": (10.0, 0.0), "openai": (7.0, 1_500_000.0)}
    assert provider_totals("") == {}


def test_rates_compare_the_newest_scrape_with_the_oldest_in_the_window() -> None:
    scrapes = [
        Scrape(0.0, {"openai": (0.0, 0.0)}),  # 70 s before the newest: outside the minute
        Scrape(10.0, {"openai": (10.0, 1_000_000.0)}),
        Scrape(40.0, {"openai": (25.0, 2_000_000.0), "sim": (4.0, 0.0)}),
        Scrape(70.0, {"openai": (40.0, 4_000_000.0), "sim": (34.0, 0.0)}),
    ]
    rates, window = provider_rates(scrapes)
    assert window == 60.0
    # openai: 30 calls and 3 USD in 60 s; sim (absent from the oldest: from zero): 34 calls.
    assert rates == [
        ProviderRate("openai", calls_per_s=0.5, usd_per_min=3.0),
        ProviderRate("sim", calls_per_s=34 / 60, usd_per_min=0.0),
    ]


def test_a_counter_that_went_down_restarted_from_zero() -> None:
    scrapes = [Scrape(0.0, {"sim": (100.0, 0.0)}), Scrape(2.0, {"sim": (6.0, 0.0)})]
    assert provider_rates(scrapes) == ([ProviderRate("sim", 3.0, 0.0)], 2.0)


def test_one_scrape_has_no_rate_yet() -> None:
    assert provider_rates([Scrape(5.0, {"sim": (9.0, 0.0)})]) == (
        [ProviderRate("sim", 0.0, 0.0)],
        0.0,
    )
    assert provider_rates([]) == ([], 0.0)


def _event(kind: str, ts: str, **data: object) -> dict[str, object]:
    return {"type": kind, "ts": ts, "data": data}


def test_open_waits_are_gates_and_pauses_not_yet_closed() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    events: list[dict[str, object]] = [
        _event("step.started", "2026-01-01T10:00:00+00:00", step="a"),
        _event("gate.opened", "2026-01-01T10:00:00+00:00", step="review"),
        _event("gate.decided", "2026-01-01T10:30:00+00:00", step="review"),
        _event("paused", "2026-01-01T11:00:00+00:00", step="name", state="AWAITING_NAME"),
        _event("gate.opened", "2026-01-01T11:30:00+00:00", step="ship"),
        _event("paused", "2026-01-01T11:40:00+00:00", step="other", state="X"),
        _event("resumed", "2026-01-01T11:50:00+00:00", step="other"),
        {"type": "paused", "ts": "garbage", "data": {"step": "bad"}},
        {"type": "paused", "ts": "2026-01-01T09:00:00+00:00", "data": "no step"},
    ]
    assert open_waits("p-1", events, now) == [
        Pause("p-1", "name", "AWAITING_NAME", "2026-01-01T11:00:00+00:00", 3600.0),
        Pause("p-1", "ship", "gate", "2026-01-01T11:30:00+00:00", 1800.0),
    ]
    closed: list[dict[str, object]] = [
        *events,
        {"type": "run.closed", "ts": "2026-01-01T11:59:00+00:00", "data": {}},
    ]
    assert open_waits("p-1", closed, now) == []


def test_the_oldest_pause_is_the_longest_waiting() -> None:
    young = Pause("p-1", "a", "gate", "t", 5.0)
    old = Pause("p-2", "b", "AWAITING", "t", 50.0)
    assert oldest_pause([young, old]) == old
    assert oldest_pause([]) is None


# -- the command against a real server --------------------------------------------------------


class _Exporter(BaseHTTPRequestHandler):
    """A worker's metrics endpoint: each scrape has counted 2 more sim calls and 0.5 more USD
    of openai than the one before."""

    scrapes = 0

    def do_GET(self) -> None:
        n = type(self).scrapes
        type(self).scrapes += 1
        body = (
            f'ponder_model_calls{{model="default",outcome="ok",provider="sim"}} {10 + 2 * n}\n'
            f'ponder_model_spend_micro_usd{{model="gpt",provider="openai"}} {500_000 * n}\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def exporter() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


PAUSED = plan_doc(
    {"id": "ask", "kind": "pause", "pause": {"state": "AWAITING_NAME", "resume_arg": "name"}},
    agent("hello", "Hello ${input.name}."),
)


async def test_top_once_json_counts_the_runs_on_its_queue(
    client: Client, settings: Settings, server_address: str, worker_queue: str, exporter: str
) -> None:
    for n in range(2):
        run_id = f"ask-{uuid.uuid4().hex[:8]}"
        await ask(client, worker_queue, AskInput(question=f"q{n}", run_id=run_id))
    paused = await start(client, worker_queue, PAUSED)
    await wait_state(paused, "awaiting_input")
    # Nobody polls this queue: its runs wait in the backlog.
    idle = f"idle-{uuid.uuid4()}"
    stuck = [
        await client.start_workflow(
            ASK, AskInput(question="waits"), id=f"ask-{uuid.uuid4().hex[:8]}", task_queue=idle
        )
        for _ in range(3)
    ]

    def env(queue: str) -> dict[str, str]:
        return cli_env(
            settings.home,
            TEMPORAL_ADDRESS=server_address,
            PONDER_TASK_QUEUE=queue,
            PONDER_RUNS_DIR=str(settings.runs_dir),
        )

    done, waiting = await asyncio.gather(
        ponder("top", "--once", "--json", "--metrics", exporter, "--interval", "0.5",
               env=env(worker_queue)),
        ponder("top", "--once", "--json", env=env(idle)),
    )  # fmt: skip
    assert done.code == 0, done.err
    frame = json.loads(done.out)
    assert frame["task_queue"] == worker_queue
    assert frame["runs"] == {"awaiting_input": {"plan": 1}, "completed": {"ask": 2}}
    pause = frame["oldest_pause"]
    assert (pause["run_id"], pause["step"], pause["waiting_for"]) == (
        paused.id,
        "ask",
        "AWAITING_NAME",
    )
    assert frame["backlog"] == {"workflow": 0, "activity": 0}
    # Two scrapes 0.5 s apart (at least: the window is measured): 2 sim calls, 0.5 USD.
    window = frame["window_s"]
    assert window >= 0.5
    assert frame["providers"] == [
        {"provider": "openai", "calls_per_s": 0.0, "usd_per_min": pytest.approx(30 / window)},
        {"provider": "sim", "calls_per_s": pytest.approx(2 / window), "usd_per_min": 0.0},
    ]

    assert waiting.code == 0, waiting.err
    idle_frame = json.loads(waiting.out)
    assert idle_frame["runs"] == {"running": {"ask": 3}}
    assert idle_frame["backlog"]["workflow"] == 3
    assert idle_frame["providers"] is None
    assert idle_frame["oldest_pause"] is None
    for handle in [paused, *stuck]:
        await handle.terminate()


async def test_the_text_frame_prints_brackets_as_they_are(
    settings: Settings, server_address: str
) -> None:
    """A queue named ``team[red]x`` is not rich markup: the text frame shows it whole."""
    env = cli_env(settings.home, TEMPORAL_ADDRESS=server_address, PONDER_TASK_QUEUE="team[red]x")
    done = await ponder("top", "--once", env=env)
    assert done.code == 0, done.err
    assert "task queue team[red]x" in done.out


def test_json_without_once_is_refused(settings: Settings) -> None:
    from tests.cli import ponder_here

    done = ponder_here("top", "--json", env=cli_env(settings.home))
    assert done.code != 0
    assert "--json prints one frame: give --once with it" in done.err


def test_a_frame_renders_as_text() -> None:
    from rich.console import Console

    from client.top_cli import _render
    from client.top_frame import Frame

    frame = Frame(
        runs={"completed": {"ask": 2}, "awaiting_input": {"plan": 1}},
        providers=[ProviderRate("sim", 1.5, 0.25)],
        window_s=60.0,
        oldest_pause=Pause("p-1", "review", "gate", "2026-01-01T10:00:00+00:00", 90.0),
        backlog={"workflow": 4, "activity": 0},
        task_queue="ponder",
    )
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(_render(frame))
    text = console.export_text()
    assert "task queue ponder" in text
    assert "calls over the last 60 s" in text
    assert "1.50" in text and "0.2500" in text
    assert "oldest waiting pause: p-1 step review (gate), waiting 90 s" in text
    assert "backlog: workflow 4, activity 0" in text
    bare = Frame(task_queue="q")
    console.print(_render(bare))
    assert "not measured (give --metrics URL" in console.export_text()


# -- the task queue in the visibility query ---------------------------------------------------


def test_a_quote_inside_a_queue_name_is_doubled() -> None:
    assert queue_literal("ponder") == "'ponder'"
    assert queue_literal("it's") == "'it''s'"
    assert queue_literal("x' OR TaskQueue != 'y") == "'x'' OR TaskQueue != ''y'"
    assert queue_literal("a%b_ü") == "'a%b_ü'"


@pytest.mark.parametrize("name", ["", 'a"b', "a\\b", "a\tb", "a\x00b", "'x", "x'"])
def test_a_queue_name_no_literal_can_match_has_none(name: str) -> None:
    assert queue_literal(name) is None


@pytest.mark.parametrize("name", ["x' OR TaskQueue != 'y", 'say "hi"', "a\\b", "a\tb"])
def test_a_queue_name_a_query_could_misread_is_refused_before_the_server(
    settings: Settings, name: str
) -> None:
    """Read unquoted, ``x' OR TaskQueue != 'y`` made the query ``TaskQueue = 'x' OR TaskQueue !=
    'y'``: every other queue's runs. The configuration refuses such names, for every command."""
    from tests.cli import ponder_here

    # No server listens on port 1: the refusal comes first.
    env = cli_env(settings.home, TEMPORAL_ADDRESS="127.0.0.1:1", PONDER_TASK_QUEUE=name)
    for command in (("top", "--once"), ("runs",)):
        done = ponder_here(*command, env=env)
        assert done.code == 2, done.err
        assert "ponder: config.invalid:" in done.err and "PONDER_TASK_QUEUE" in done.err
        assert "without quotes, backslashes or control characters" in done.err
