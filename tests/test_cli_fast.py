"""Commands answer at once: reads of ended runs come from the run store without a
server, the embedded server lingers for a burst of commands, and the read commands' help loads
no Temporal SDK."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from activities.config import load_settings
from client.cli import COMMANDS
from client.embedded import EmbeddedServer
from client.status_http import show_status_over_http
from tests.cli import cli_env, one_server, ponder
from tests.test_embedded import server_pids, wait_until

HEAVY = (
    *("temporalio", "rich", "jinja2", "numpy", "scipy", "mcp", "httpx", "uvicorn"),
    *("activities.config", "yaml"),
)
"""What no command's ``--help`` may import: the SDK, the display, the reports, the statistics,
the MCP server, HTTP (each costs a tenth of a second to a second), and the settings loader and
YAML parser (``ponder.toml`` and saved profiles are read when a command runs, not for its help)."""

HELP_PROBE = """
import json, sys
import click
from client.cli import COMMANDS, cli

def paths(command, path):
    yield path
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from paths(command.get_command(ctx, name), [*path, name])

commands, watched = json.loads(sys.argv[1]), set(sys.argv[2:])
found = []
for name in sorted(commands):
    # Each top-level command loads (as its --help does) before the next is looked at, so a heavy
    # import is charged to the first command whose module makes it.
    for path in paths(cli.get_command(click.Context(cli), name), [name]):
        try:
            cli.main([*path, "--help"], standalone_mode=False)
        except SystemExit:
            pass
        names = set(sys.modules)
        heavy = sorted(w for w in watched if any(m == w or m.startswith(w + ".") for m in names))
        found.append([" ".join(path), heavy])
print(json.dumps(found))
"""


def help_imports(commands: set[str], watched: tuple[str, ...]) -> list[list[Any]]:
    """``[path, heavy packages loaded]`` for each command path of ``commands``, their help shown
    in turn in one interpreter (a heavy import is charged to the first path that makes it)."""
    with tempfile.TemporaryDirectory() as home:  # the group's log, not in the real ~/.ponder
        out = subprocess.run(
            [sys.executable, "-c", HELP_PROBE, json.dumps(sorted(commands)), *watched],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env=cli_env(Path(home)),
        ).stdout
    found: list[list[Any]] = json.loads(out.splitlines()[-1])
    return found


def test_no_command_help_imports_the_sdk() -> None:
    """Every command and subcommand of the COMMANDS table (the click tree walked) shows its help
    without importing the SDK or any other heavy package, in one interpreter: a heavy import is
    charged to the first path that makes it and stays loaded after, so all must be clean."""
    found = help_imports(set(COMMANDS), HEAVY)
    top = {path.split()[0] for path, _ in found}
    assert top == set(COMMANDS) and len(found) > len(COMMANDS)  # the subcommands were walked
    assert [path for path, heavy in found if heavy] == [], found


def test_no_command_help_imports_pydantic() -> None:
    """Building pydantic models costs a tenth of a second: every command's help, ``think``,
    ``rank``, ``mutate`` and ``profile save`` too (their options are declared on pydantic
    models and read from the generated ``client/cli-options.json``), is shown without them."""
    found = help_imports(set(COMMANDS), ("pydantic",))
    assert len(found) > len(COMMANDS)
    assert [path for path, heavy in found if heavy] == [], found


RUN_KINDS = (
    "workflows.ask_types",
    "workflows.tournament",
    "workflows.plan",
    "workflows.campaign",
    "client.tournament_follow",
    "client.plan_follow",
    "client.campaign_control",
    "activities.providers",
)
"""A run kind's types and display: ``ponder status`` loads the one kind ``describe`` names."""

STATUS_PROBE = """
import json, sys
import client.status_cli, client.status_query
print(json.dumps(sorted(m for m in sys.modules)))
"""


def test_status_of_a_live_run_imports_no_run_kind_before_it_knows_the_kind() -> None:
    """The server half of ``ponder status`` (a live run, with a server up) loads the SDK client
    and the session, and no run kind's types nor any heavy package other than the SDK, until
    ``describe`` says which kind the run is (``status`` of a live run under 0.5 s)."""
    out = subprocess.run(
        [sys.executable, "-c", STATUS_PROBE], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out.splitlines()[-1])
    assert "temporalio.client" in loaded  # the probe did load the server half
    kinds = [m for m in loaded if m.startswith(RUN_KINDS)]
    running = {"temporalio", "activities.config"}  # the query and the settings it runs with
    watched = set(HEAVY) - running
    heavy = [m for m in loaded if any(m == w or m.startswith(w + ".") for w in watched)]
    assert (kinds, heavy) == ([], []), (kinds, heavy)


PROGRESS_PROBE = """
import json, sys
from client.status_http import _tournament

PROGRESS = (
    '{"run_id": "r1", "status": "running", "phase": "initial_generation", "generation": 0,'
    ' "calls_planned": 15, "budget": {}, "spent": {}}'
)


class Answers:  # what the server answers the progress query of a live tournament
    def query(self, run_id, query_type):
        return PROGRESS.encode()


assert _tournament(Answers(), "r1", as_json=True)
print(json.dumps(sorted(m for m in sys.modules)))
"""


def test_a_live_tournaments_status_over_http_loads_its_progress_not_its_input_types() -> None:
    """The progress and its display, not the tournament's input and result models (about 16 ms
    of import a read of a live run has no use for)."""
    out = subprocess.run(
        [sys.executable, "-c", PROGRESS_PROBE], capture_output=True, text=True, check=True
    ).stdout
    lines = out.splitlines()
    assert '"run_id": "r1"' in out  # the progress was printed, as JSON
    loaded = json.loads(lines[-1])
    assert "workflows.tournament.progress" in loaded
    assert "workflows.tournament.types" not in loaded
    assert "temporalio.client" not in loaded and "asyncio" not in loaded


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_ended_runs_are_read_from_the_store_after_the_server_idled_out(
    tmp_path: Path,
) -> None:
    # The server outlives the last command by two idle periods (the lingering background
    # worker's, then its own), all waited out below: 2 x 6 s still leaves the second ask
    # seconds to find it up, however loaded.
    env = cli_env(tmp_path, PONDER_SERVER_IDLE_S="6")
    server = EmbeddedServer(tmp_path)
    first = await ponder("ask", "hello", "--model", "sim:default", "--run-id", "a1", env=env)
    assert first.code == 0, first.err
    lingering = server.read_state()
    assert lingering is not None and server.up()  # its last user left; it stays for a while
    second = await ponder("ask", "again", "--model", "sim:default", "--run-id", "a2", env=env)
    assert second.code == 0, second.err
    state = server.read_state()
    assert state is not None and state.pid == lingering.pid  # the burst paid for one start
    # Then the idle period ends: the keeper stops the server, then removes its record.
    await wait_until(lambda: not server_pids(server.db) and not server.state_file.exists(), 90)
    log_size = server.log_file.stat().st_size

    shown = await ponder("status", "a1", env=env)
    assert shown.code == 0, shown.err
    assert "completed" in shown.out and "run store" in shown.out
    as_json = json.loads((await ponder("status", "a1", "--json", env=env)).out)
    # The server's view of an Ask (client.ask_view), read from its summary.json.
    assert (as_json["kind"], as_json["status"], as_json["model"]) == (
        "ask",
        "completed",
        "sim:default",
    )
    assert as_json["answer_path"].endswith("a1/artifacts/answer.txt")
    listed = await ponder("runs", "--json", env=env)
    assert listed.code == 0, listed.err
    rows = {row["run_id"]: row for row in json.loads(listed.out)}
    assert rows["a1"]["status"] == rows["a2"]["status"] == "completed"
    reported = await ponder("report", "a2", env=env)
    assert reported.code == 0 and reported.out.strip().endswith("a2/report.html"), reported.err
    exported = await ponder("export", "a2", env=env)
    assert exported.code == 0 and '"a2"' in exported.out, exported.err

    # None of those reads started a server (each start appends to the server's log).
    assert not server.state_file.exists() and not server_pids(server.db)
    assert server.log_file.stat().st_size == log_size


async def _poller_identities(home: Path, task_queue: str) -> set[str]:
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
    from temporalio.client import Client

    info = EmbeddedServer(home).read_state()
    assert info is not None
    client = await Client.connect(info.address)
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return {poller.identity for poller in described.pollers}


BOTH_PATHS_PROBE = """
import contextlib, io, json, sys
from activities.config import load_settings
from client.status_http import show_status_over_http

def shown(read, run_id, as_json):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        answered = read(load_settings(), run_id, as_json=as_json)
    return answered, out.getvalue()

cases = json.loads(sys.argv[1])
over_http = [shown(show_status_over_http, *case) for case in cases]
sdk_loaded = sorted(m for m in sys.modules if m.startswith("temporalio"))
from client.status_query import show_status
through_sdk = [shown(show_status, *case)[1] for case in cases]
print(json.dumps({"http": over_http, "sdk_loaded": sdk_loaded, "sdk": through_sdk}))
"""
"""Each ``[run_id, as_json]`` shown over the HTTP API first (before anything loads the SDK),
then through the SDK, in one process with the same settings and terminal width."""

RELEASE = Path(__file__).parents[1] / "examples" / "plans" / "release.yaml"
"""Pauses at once, awaiting its owner's name."""

TINY_CAMPAIGN = """\
schema: ponder-campaign/1
campaign_id: tiny
commit_sha: example
comparator: a
seeds: [0, 1, 2]
concurrency: 1
variants:
  - {id: a, kind: single, config: {model: "sim:default"}}
  - {id: b, kind: single, config: {model: "sim:default"}}
scenarios:
  - {id: lis, task: "Longest increasing subsequence.", scorer: {kind: sim_truth}}
budget: {max_calls: 2}
"""


def _same_clock(text: str) -> str:
    """A live run's elapsed time is counted to the moment it is shown, and a longer figure
    ("9.9s", then "10.0s") widens its table column: padding and rules are dropped too."""
    return re.sub(r"[ ─]+", " ", re.sub(r"elapsed +[0-9.]+s", "elapsed Ns", text))


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_status_over_http_prints_what_the_sdk_path_prints(tmp_path: Path) -> None:
    """With the background worker serving its runs, ``ponder status`` reads a live tournament,
    plan and campaign over the server's HTTP API without importing the SDK, and prints exactly
    what the SDK path prints (text and JSON), whose queries the background worker answers too
    (a query needs a worker polling the run's queue: the poller list would show the reader's
    own). Without a live background worker the HTTP path declines, and ``status`` answers
    through the SDK with a worker of its own."""
    env = cli_env(tmp_path)
    campaign = tmp_path / "tiny.yaml"
    campaign.write_text(TINY_CAMPAIGN)
    async with one_server(tmp_path):
        starts = [
            # A retried judge call leaves the run paused at its planned calls.
            ("think", "Sort a list", "--seed", "4", "--model", "sim:default,invalid_json_rate=0.5",
             "--invalid-json-retries", "3", "--max-calls", "15", "--run-id", "t1"),
            ("plan", "run", str(RELEASE), "--arg", "version=3", "--run-id", "p1"),
            ("campaign", "run", str(campaign), "--run-id", "c1"),
        ]  # fmt: skip
        for start in starts:
            started = await ponder(*start, "--detach", env=env)
            assert started.code == 0, started.err
        waits = {"t1": "awaiting_budget", "p1": "awaiting_input", "c1": "awaiting_budget"}
        for run_id, state in waits.items():  # each run settles into its pause
            deadline = time.monotonic() + 90
            while True:
                shown = await ponder("status", run_id, "--json", env=env)
                view = json.loads(shown.out) if shown.code == 0 else {}
                if state in (view.get("status"), view.get("state")):
                    break
                assert time.monotonic() < deadline, (run_id, shown)
                await asyncio.sleep(0.5)

        cases = [[run_id, as_json] for run_id in waits for as_json in (False, True)]
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", BOTH_PATHS_PROBE, json.dumps(cases), env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(probe.communicate(), 120)
        assert probe.returncode == 0, err.decode()
        both = json.loads(out.decode().splitlines()[-1])
        assert both["sdk_loaded"] == []  # every HTTP read was made without the SDK
        for (case_id, as_json), (answered, over_http), through_sdk in zip(
            cases, both["http"], both["sdk"], strict=True
        ):
            assert answered, (case_id, as_json)
            assert case_id in over_http
            assert _same_clock(over_http) == _same_clock(through_sdk), (case_id, as_json)
        # The SDK path's query was answered by the background worker too: none of its own.
        # It polls its configuration's queue, ``ponder.<digest>``, named by its record.
        (record_file,) = (tmp_path / "workers").glob("ponder.*.json")
        identities = await _poller_identities(tmp_path, record_file.stem)
        assert not any(i.startswith(f"{probe.pid}@") for i in identities), identities

        # The background worker gone, the HTTP path declines and the SDK path answers.
        record = json.loads(record_file.read_text())
        os.kill(record["pid"], signal.SIGTERM)
        await wait_until(lambda: not Path(f"/proc/{record['pid']}").exists(), 90)
        settings = load_settings(home=str(tmp_path))
        assert not show_status_over_http(settings, "t1", as_json=True)
        shown = await ponder("status", "t1", "--json", env=env)
        assert shown.code == 0 and json.loads(shown.out)["status"] == "awaiting_budget", shown


RUNS_PROBE = """
import json, sys
from client.cli import cli
cli.main(["runs", "--json", "--cells"], standalone_mode=False)
print("SDK", json.dumps(sorted(m for m in sys.modules if m.startswith("temporalio"))))
"""


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_runs_with_the_server_up_reads_the_servers_list_over_http_as_the_sdk_does(
    tmp_path: Path,
) -> None:
    """With the embedded server up, ``ponder runs`` joins the run store to the server's list read
    over its HTTP API: the rows the SDK path gives (a run only the server knows among them),
    without importing the SDK."""
    from temporalio.client import Client

    from client.run_list import RunRow, list_runs

    env = cli_env(tmp_path)
    async with one_server(tmp_path):
        done = await ponder("ask", "hello", "--model", "sim:default", "--run-id", "a1", env=env)
        assert done.code == 0, done.err
        info = EmbeddedServer(tmp_path).read_state()
        assert info is not None
        client = await Client.connect(info.address)
        # On a queue no worker polls: the server knows it, the run store does not.
        await client.start_workflow("Ask", {}, id="live-1", task_queue="nobody-polls")
        settings = load_settings(home=str(tmp_path))
        deadline = time.monotonic() + 60
        while True:  # the server's list is its visibility store, which a new run reaches later
            through_sdk = await list_runs(settings, client, cells=True, limit=50)
            if {"a1", "live-1"} <= {row.run_id for row in through_sdk}:
                break
            assert time.monotonic() < deadline, through_sdk
            await asyncio.sleep(0.2)
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", RUNS_PROBE, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(probe.communicate(), 120)
        assert probe.returncode == 0, err.decode()
        text = out.decode()
        listed, sdk = text.rsplit("SDK", 1)
        assert json.loads(sdk) == []  # read without the SDK
        over_http = [RunRow.model_validate(row) for row in json.loads(listed)]
        assert over_http == through_sdk
        rows = {row.run_id: row for row in over_http}
        assert (rows["live-1"].status, rows["live-1"].on_server, rows["live-1"].in_store) == (
            "running",
            True,
            False,
        )
        assert (rows["a1"].status, rows["a1"].on_server, rows["a1"].in_store) == (
            "completed",
            True,
            True,
        )
        await client.get_workflow_handle("live-1").terminate()
