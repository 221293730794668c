"""Commands answer at once (issue 16): reads of ended runs come from the run store without a
server, the embedded server lingers for a burst of commands, and the read commands' help loads
no Temporal SDK."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from client.cli import COMMANDS
from client.embedded import EmbeddedServer
from tests.cli import cli_env, finish, one_server, ponder, start_ponder
from tests.test_embedded import server_pids, wait_until

HEAVY = (
    *("temporalio", "rich", "jinja2", "numpy", "scipy", "mcp", "httpx", "uvicorn"),
    *("pydantic_settings", "yaml"),
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
        heavy = sorted({m.split(".")[0] for m in sys.modules} & watched)
        found.append([" ".join(path), heavy])
print(json.dumps(found))
"""


def help_imports(commands: set[str], watched: tuple[str, ...]) -> list[list[Any]]:
    """``[path, heavy packages loaded]`` for each command path of ``commands``, their help shown
    in turn in one interpreter (a heavy import is charged to the first path that makes it)."""
    out = subprocess.run(
        [sys.executable, "-c", HELP_PROBE, json.dumps(sorted(commands)), *watched],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
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
    ``describe`` says which kind the run is (issue 16: ``status`` of a live run under 0.5 s)."""
    out = subprocess.run(
        [sys.executable, "-c", STATUS_PROBE], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out.splitlines()[-1])
    assert "temporalio.client" in loaded  # the probe did load the server half
    kinds = [m for m in loaded if m.startswith(RUN_KINDS)]
    running = {"temporalio", "pydantic_settings"}  # the query and the settings it runs with
    heavy = [m for m in loaded if m.split(".")[0] in set(HEAVY) - running]
    assert (kinds, heavy) == ([], []), (kinds, heavy)


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_ended_runs_are_read_from_the_store_after_the_server_idled_out(
    tmp_path: Path,
) -> None:
    env = cli_env(tmp_path, PONDER_SERVER_IDLE_S="10")
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
    assert (as_json["kind"], as_json["status"], as_json["calls"]) == ("ask", "completed", 1)
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


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_status_of_a_live_run_asks_the_worker_that_serves_it(tmp_path: Path) -> None:
    """A query needs a worker polling the run's queue: with the background worker serving the
    run, ``status`` starts none of its own (the poller list would show its pid)."""
    env = cli_env(tmp_path)
    async with one_server(tmp_path):
        paused = await ponder(
            "think",
            "Sort a list",
            "--seed",
            "4",
            "--model",
            "sim:default,invalid_json_rate=0.5",
            "--invalid-json-retries",
            "3",
            "--max-calls",
            "15",  # the plan's calls: a retried judge call leaves the run paused, live
            "--run-id",
            "t1",
            "--detach",
            env=env,
        )
        assert paused.code == 0, paused.err  # the background worker runs it into its pause
        record = json.loads((tmp_path / "workers" / "ponder.json").read_text())
        deadline = time.monotonic() + 90
        while not any(
            i.startswith(f"{record['pid']}@") for i in await _poller_identities(tmp_path, "ponder")
        ):
            assert time.monotonic() < deadline, "the background worker never polled"
            await asyncio.sleep(0.2)
        process = await start_ponder("status", "t1", "--json", env=env)
        shown = await finish(process)
        assert shown.code == 0, shown.err
        assert json.loads(shown.out)["status"] in ("running", "awaiting_budget"), shown.out
        identities = await _poller_identities(tmp_path, "ponder")
        assert not any(i.startswith(f"{process.pid}@") for i in identities), identities
