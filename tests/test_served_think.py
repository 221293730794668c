"""A served ``ponder think`` (the embedded server up, its configuration's background worker live)
starts and follows its tournament over the server's HTTP API, without loading the SDK or an
event loop, and prints what the SDK path prints; a run that pauses on its budget is handed to
the SDK path, which follows the same run and prints the same pause line and exit code.

One server and background worker serve the whole module (the first command, on the SDK path
with a worker of its own, leaves the worker). Whether a process loaded the SDK is read from its
``-X importtime`` lines (``tests.served``).
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError
from temporalio.worker import Replayer

from activities.config import load_settings
from client.connect import data_converter
from client.exit_codes import EXIT_PAUSED
from tests.cli import Done, cli_env, one_server
from tests.conftest import kill_processes_under
from tests.served import IMPORT_LINE, loaded, loaded_sdk, ponder_importing, start_attributes
from worker.worker import WORKFLOWS
from workflows.names import TOURNAMENT
from workflows.tournament.types import TournamentInput

pytestmark = [pytest.mark.slow]

THINK = ("--profile", "quick", "--provider", "sim", "--model", "sim:default,latency=fixed:20")


@dataclass
class Served:
    home: Path
    env: dict[str, str]
    client: Client
    first: Done
    """The module's first think, before any background worker."""


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    home = tmp_path_factory.mktemp("served-think")
    # An idle period, as a user's commands have: the first think leaves the background worker.
    env = cli_env(home, PONDER_SERVER_IDLE_S="60")
    try:
        async with one_server(home) as info:
            first = await think("Warm up", *THINK, "--run-id", "warm-up", env=env)
            assert first.code == 0, first.err
            client = await Client.connect(
                info.address, data_converter=data_converter(load_settings(home=str(home)))
            )
            yield Served(home, env, client, first)
    finally:
        kill_processes_under(home)


async def think(*args: str, env: dict[str, str]) -> Done:
    return await ponder_importing("think", *args, env=env)


def printed(done: Done, run_id: str) -> list[str]:
    """What the command printed on stderr (its import lines left out), its run id and elapsed
    time (the machine's) made neutral."""
    return [
        re.sub(r"\b\d+(\.\d+)?s\b", "Ns", line.replace(run_id, "RUN"))
        for line in done.err.splitlines()
        if not line.startswith("import time:")
    ]


def sdk_env(served: Served) -> dict[str, str]:
    """The SDK path, forced by a secrets file (which the HTTP path leaves to it)."""
    secrets = served.home / "secrets.env"
    secrets.write_text("")
    return {**served.env, "PONDER_SECRETS_FILE": str(secrets)}


async def test_a_served_think_goes_over_http_and_prints_what_the_sdk_path_prints(
    served: Served,
) -> None:
    """The same tournament on both paths: the same final answer on stdout and the same lines on
    stderr (the last progress frame, the winner, the summary, the report path), and a start
    event that differs in its ids and identity only."""
    # The sim's draws and the panel's column widths (run ids of one length): the same.
    seeded = (*THINK, "--seed", "7")
    through_sdk = await think("Sort a list", *seeded, "--run-id", "run-sdk", env=sdk_env(served))
    over_http = await think("Sort a list", *seeded, "--run-id", "run-api", env=served.env)
    assert through_sdk.code == 0 and over_http.code == 0, (through_sdk.err, over_http.err)
    assert loaded_sdk(through_sdk) and not loaded_sdk(over_http)
    assert not loaded(over_http, "asyncio")  # a client only: 15 ms of import it has no use for
    assert over_http.out == through_sdk.out and over_http.out.strip()
    assert printed(over_http, "run-api") == printed(through_sdk, "run-sdk")
    lines = printed(over_http, "run-api")
    assert any(line.startswith("winner: ") and "after 15 calls" in line for line in lines)
    assert lines[-1].startswith("report: ") and lines[-1].endswith("/RUN/report.html")

    assert await start_attributes(served.client, "run-api") == await start_attributes(
        served.client, "run-sdk"
    )


async def test_a_tournament_started_over_http_replays_and_decodes_to_its_input(
    served: Served,
) -> None:
    done = await think("Replay me", *THINK, "--seed", "3", "--run-id", "replayed", env=served.env)
    assert done.code == 0 and not loaded_sdk(done), done.err
    history = await served.client.get_workflow_handle("replayed").fetch_history()
    # Through JSON, as the saved histories of tests/test_replay.py are kept.
    history = WorkflowHistory.from_json("replayed", history.to_json())
    converter = data_converter(load_settings(home=str(served.home)))
    replayer = Replayer(workflows=WORKFLOWS, data_converter=converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.workflow_type.name == TOURNAMENT
    (decoded,) = converter.payload_converter.from_payloads(
        started.input.payloads, [TournamentInput]
    )
    assert (decoded.task, decoded.seed, decoded.run_id) == ("Replay me", 3, "replayed")


OUTGROWN = (
    *("--profile", "quick", "--provider", "sim", "--seed", "4", "--max-calls", "15"),
    *("--model", "sim:default,latency=fixed:20,invalid_json_rate=0.5"),
    *("--invalid-json-retries", "10"),
)
"""A tournament whose judge retries use up its 15 calls. Half its judge answers are invalid, so
retries spend the budget early; with ten retries a call never runs out of them (each attempt's
answer is a pure function of the seed and the call's key, so this holds in any order the calls
land in). With 0.9 and three, a call that ran out first failed the run instead of pausing it."""


async def test_a_paused_served_think_is_handed_to_the_sdk_path(served: Served) -> None:
    """A budget the run outgrows (judge retries use up its 15 calls): the SDK path takes the
    same run over and prints the pause line and exit code it prints when it started the run
    itself."""
    budget = OUTGROWN
    through_sdk = await think("Pause me", *budget, "--run-id", "paused-sdk", env=sdk_env(served))
    handed = await think("Pause me", *budget, "--run-id", "paused-http", env=served.env)
    assert through_sdk.code == handed.code == EXIT_PAUSED, (through_sdk.err, handed.err)
    assert loaded_sdk(handed)
    pause = [line for line in printed(handed, "paused-http") if "paused awaiting budget" in line]
    assert pause == [
        line for line in printed(through_sdk, "paused-sdk") if "paused awaiting budget" in line
    ]
    assert pause and pause[0].startswith("run RUN is paused awaiting budget (max_calls")
    assert handed.out == through_sdk.out == ""
    runs = [run async for run in served.client.list_workflows("WorkflowId = 'paused-http'")]
    assert len(runs) == 1


async def test_a_failed_served_think_says_what_the_sdk_path_says(served: Served) -> None:
    """A run that fails (its budget used up, told to fail): the SDK path, which owns every
    failure's message, reports it in the same line and exit code as when it started the run."""
    failing = (*OUTGROWN, "--on-budget-exhausted", "fail")
    through_sdk = await think("Fail me", *failing, "--run-id", "failed-sdk", env=sdk_env(served))
    handed = await think("Fail me", *failing, "--run-id", "failed-api", env=served.env)
    assert through_sdk.code == handed.code == 1, (through_sdk.err, handed.err)
    assert loaded_sdk(handed)
    # The panel's counts depend on which concurrent calls landed before the budget ran out.
    (sdk_line,) = [line for line in printed(through_sdk, "failed-sdk") if line.startswith("ponder")]
    (http_line,) = [line for line in printed(handed, "failed-api") if line.startswith("ponder")]
    assert http_line == sdk_line
    assert http_line.startswith("ponder: budget.exhausted: run RUN failed: ")
    assert handed.out == through_sdk.out == ""


async def test_a_run_still_going_after_the_wait_is_followed_through_the_sdk_once(
    served: Served,
) -> None:
    """Calls of 1.4 s in four rounds outlast the HTTP follower's wait: the SDK path's follower
    takes the same run over (one run under the id) and prints its outcome once."""
    slow = ("--profile", "quick", "--provider", "sim", "--model", "sim:default,latency=fixed:1400")
    done = await think("Slow one", *slow, "--run-id", "slow", env=served.env)
    assert done.code == 0, done.err
    assert loaded_sdk(done)
    assert done.out.count("[sim q=") == 1
    lines = printed(done, "slow")
    (winner,) = [line for line in lines if line.startswith("winner: ")]
    assert winner.endswith(" after 15 calls")
    assert [line for line in lines if line.startswith("report: ")] == [
        f"report: {served.home / 'runs' / 'RUN' / 'report.html'}"
    ]
    runs = [run async for run in served.client.list_workflows("WorkflowId = 'slow'")]
    assert len(runs) == 1


LEFT_TO_THE_WORKER = (
    *("temporalio", "httpx", "activities.providers.http", "activities.providers.openai"),
    *("activities.providers.anthropic", "activities.providers.command"),
    *("activities.providers.replay", "client.tournament_options", "client.profiles"),
)
"""What a served think, a client only, never loads: the SDK, the provider implementations (the
worker's; the CLI resolves and prices model specs from the settings alone) with httpx, and the
option and saved-profile models (a built-in ``--profile`` reads its options as plain values)."""


def imported(done: Done) -> set[str]:
    """The modules a ``-X importtime`` process loaded."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.err.splitlines()
        if line.startswith(IMPORT_LINE)
    }


async def test_a_served_think_loads_no_provider_sdk_or_option_models(served: Served) -> None:
    done = await think("Stay light", *THINK, "--run-id", "light", env=served.env)
    assert done.code == 0 and done.out.strip(), done.err
    loaded = imported(done)
    assert "client.think_http" in loaded and "rich.table" in loaded  # the probe sees the path
    assert sorted(m for m in loaded if m.startswith(LEFT_TO_THE_WORKER)) == []


def test_the_rows_and_snapshot_a_client_never_validates_are_built_at_first_use() -> None:
    """A command that starts and reads tournaments builds only the models it validates; a
    deferred model still validates (and refuses) as before at its first use."""
    probe = (
        "import pydantic\n"
        "import workflows.tournament.types as t\n"
        "built = lambda m: m.__pydantic_complete__\n"
        "print(built(t.TournamentInput), built(t.TournamentResult), built(t.Progress))\n"
        "print(built(t.TournamentSnapshot), built(t.UsageRow), built(t.ComparisonRow))\n"
        "row = t.Event.model_validate({'seq': 1, 'ts': 'now', 'type': 'x'})\n"
        "try:\n"
        "    t.ExtendBudgetInput.model_validate({'max_calls': 1, 'surprise': 2})\n"
        "except pydantic.ValidationError as exc:\n"
        "    print(row.seq, built(t.Event), exc.errors()[0]['type'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["True True True", "False False False", "1 True extra_forbidden"]


def test_without_a_live_background_worker_a_think_takes_the_sdk_path(served: Served) -> None:
    """The module's first think: the server up, no background worker yet (it leaves one)."""
    assert served.first.code == 0 and loaded_sdk(served.first)
    assert served.first.out.strip()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_while_followed_over_http_detaches(served: Served, sig: int) -> None:
    """Ctrl-C or SIGTERM once the run exists (followed over HTTP: its calls take 1.2 s in all)
    leaves the run going and exits 0 without loading the SDK, as the SDK path detaches."""
    run_id = f"detach-{sig}"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-X", "importtime", "-m", "client", "think", "Leave me", "--profile",
        "quick", "--provider", "sim", "--model", "sim:default,latency=fixed:300", "--run-id",
        run_id, env=served.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    handle = served.client.get_workflow_handle(run_id)
    async with asyncio.timeout(30):
        while True:
            try:
                await handle.describe()
                break
            except RPCError:
                await asyncio.sleep(0.05)
    process.send_signal(sig)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    done = Done(process.returncode or 0, out.decode(), err.decode())
    assert process.returncode == 0, done.err
    assert printed(done, run_id)[-1] == "detached; the run goes on: ponder watch RUN"
    assert not loaded_sdk(done) and "Traceback" not in done.err and out == b""
    await handle.result()  # the background worker carried it on


def test_a_completed_run_s_stored_progress_is_its_last_frame(tmp_path: Path) -> None:
    """The last frame comes from the run store only when the store holds a completed run's
    progress; anything else is asked of the server."""
    from client.think_http import _stored_progress
    from workflows.progress_file import PROGRESS_FILE, progress_json
    from workflows.tournament.progress import Progress

    assert _stored_progress(tmp_path) is None
    progress = {
        **{"run_id": "r", "status": "completed", "phase": "done", "generation": 1},
        **{"calls_planned": 15, "budget": {}, "spent": {}},
    }
    shown = Progress.model_validate(progress)
    for status, expected in (("completed", shown), ("running", None)):
        text = progress_json(
            "tournament", progress | {"status": status}, started_at=None, written_at=None
        )
        (tmp_path / PROGRESS_FILE).write_text(text)
        assert _stored_progress(tmp_path) == expected
    (tmp_path / PROGRESS_FILE).write_text("{not json")
    assert _stored_progress(tmp_path) is None
