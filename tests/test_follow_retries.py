"""Every follow display shows a model call's failed attempts as they happen: ``ponder watch`` of
an ask, of a tournament, of a plan run (its own calls, and a tournament step's, a child
workflow's) and of a campaign (its cells', child workflows too), each against a model endpoint
where nothing listens.

The runs are started here on this test's worker, whose ``local`` provider points at a closed
loopback port; ``ponder watch`` runs as a real process against the same server and queue. Its
first retry line is all a test waits for: the run is terminated then (its retries would take
half a minute to run out)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from activities.config import Endpoint, Settings
from client.call_progress import above_panel, to_stderr
from tests.campaigns.helpers import document
from tests.cli import cli_env, start_ponder
from tests.conftest import with_endpoint
from tests.plans.run_helpers import agent, plan_doc, start
from tests.test_refused_connection import REFUSED, closed_port
from workflows.ask_types import AskInput
from workflows.model_calls import MODEL_RETRY_POLICY
from workflows.names import ASK, CAMPAIGN, TOURNAMENT
from workflows.tournament.types import TournamentInput

MODEL = "local:llama3"
MAXIMUM = MODEL_RETRY_POLICY.maximum_attempts


@pytest.fixture
def url() -> str:
    """A loopback endpoint nothing listens on (a port found free for this test)."""
    return f"http://127.0.0.1:{closed_port()}/v1"


@pytest.fixture
def settings(settings: Settings, url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    # A campaign checks its cells' routes first, a key among them: this worker's own.
    monkeypatch.setenv("FOLLOW_RETRIES_KEY", "sk-local")
    endpoint = Endpoint(kind="openai", base_url=url, api_key_env="FOLLOW_RETRIES_KEY")
    return with_endpoint(settings, "local", endpoint)


def assert_retry_line(line: str, url: str) -> None:
    """The first line shown in full. The first poll may come after the second attempt has
    failed too: that attempt is then the first one shown. A tournament's or campaign's calls
    refused alike share one line."""
    shape = (
        rf"ponder: (\d+ calls: )?attempt \d of {MAXIMUM} failed \(provider\.transport\): "
        rf"{re.escape(REFUSED)} {re.escape(url)} \(connection refused, provider local\): .*; "
        r"attempt \d (in \d+s|runs)( \(Ctrl-C detaches, the run goes on\))?"
    )
    assert re.fullmatch(shape, line), line


async def first_retry_line(
    settings: Settings, server_address: str, queue: str, handle: WorkflowHandle
) -> str:
    """``ponder watch`` of ``handle``'s run: its first retry line on stderr (the run is ended
    then, and the command with it)."""
    env = cli_env(
        settings.home,
        TEMPORAL_ADDRESS=server_address,
        PONDER_TASK_QUEUE=queue,
        PONDER_RUNS_DIR=str(settings.runs_dir),
    )
    watch = await start_ponder("watch", handle.id, env=env)
    assert watch.stderr is not None
    seen: list[str] = []
    try:
        async with asyncio.timeout(60):  # a cold process start under load, then one poll
            while True:
                line = (await watch.stderr.readline()).decode()
                assert line, f"watch ended before a retry line: {seen}"
                seen.append(line.rstrip("\n"))
                if line.startswith("ponder: ") and "attempt" in line:
                    break
        assert watch.returncode is None  # shown while the call waits, not at the run's end
    finally:
        with contextlib.suppress(RPCError):  # a run that ended by itself: the assert says why
            await handle.terminate()
        if watch.returncode is None:
            watch.kill()
        await watch.wait()
    return seen[-1]


# -- one run of each kind, on a worker whose model endpoint refuses ----------------------------

Start = Callable[[Client, str], Awaitable[WorkflowHandle[Any, Any]]]


async def an_ask(client: Client, queue: str) -> WorkflowHandle[Any, Any]:
    run_id = f"ask-{uuid.uuid4().hex[:8]}"
    ask = AskInput(question="Hi", model=MODEL, run_id=run_id)
    return await client.start_workflow(ASK, ask, id=run_id, task_queue=queue)


async def a_tournament(client: Client, queue: str) -> WorkflowHandle[Any, Any]:
    task = TournamentInput(task="Name a prime.", profile="quick", model=MODEL)
    run_id = f"think-{uuid.uuid4().hex[:8]}"
    return await client.start_workflow(TOURNAMENT, task, id=run_id, task_queue=queue)


async def a_plan_agent_step(client: Client, queue: str) -> WorkflowHandle[Any, Any]:
    return await start(client, queue, plan_doc(agent("draft", "Draft it.", model=MODEL)))


async def a_plan_tournament_step(client: Client, queue: str) -> WorkflowHandle[Any, Any]:
    # The step's calls are a child Tournament's: pending on the child, not on the plan run.
    step = {"id": "pick", "kind": "tournament", "prompt": "Name a prime.", "model": MODEL}
    return await start(client, queue, plan_doc(step))


async def a_campaign(client: Client, queue: str) -> WorkflowHandle[Any, Any]:
    # Its calls are its cells' child workflows'.
    doc: dict[str, Any] = document(seeds=[0, 1], concurrency=2)
    doc["scenarios"] = doc["scenarios"][:1]
    for variant in doc["variants"]:
        variant["config"]["model"] = MODEL
    run_id = f"campaign-{uuid.uuid4().hex[:8]}"
    return await client.start_workflow(CAMPAIGN, doc, id=run_id, task_queue=queue)


@pytest.mark.parametrize(
    ("start_run", "detaches"),
    [
        # An ask's follower is the one that says Ctrl-C only detaches.
        pytest.param(an_ask, True, id="ask"),
        pytest.param(a_tournament, False, id="tournament"),
        pytest.param(a_plan_agent_step, False, id="plan-agent-step"),
        pytest.param(a_plan_tournament_step, False, id="plan-tournament-step"),
        pytest.param(a_campaign, False, id="campaign"),
    ],
)
async def test_watch_shows_a_refused_call_while_it_waits(
    start_run: Start,
    detaches: bool,
    client: Client,
    settings: Settings,
    server_address: str,
    worker_queue: str,
    url: str,
) -> None:
    handle = await start_run(client, worker_queue)
    line = await first_retry_line(settings, server_address, worker_queue, handle)
    assert_retry_line(line, url)
    if detaches:
        assert line.endswith(" (Ctrl-C detaches, the run goes on)")


# -- the two ways a follower prints them ------------------------------------------------------


def test_a_line_goes_to_stderr_or_above_the_panel(capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from rich.console import Console

    to_stderr("attempt 1 of 6 failed [x]")
    assert capsys.readouterr() == ("", "ponder: attempt 1 of 6 failed [x]\n")
    console = Console(file=io.StringIO(), width=20, markup=False)
    above_panel(console)("attempt 1 of 6 failed [provider.transport]: a long message")
    text = console.file.getvalue()  # type: ignore[attr-defined]
    # Not wrapped at the console's width, and [brackets] are not markup.
    assert text == "ponder: attempt 1 of 6 failed [provider.transport]: a long message\n"
