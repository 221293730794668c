"""Commands answer at once (issue 16): reads of ended runs come from the run store without a
server, the embedded server lingers for a burst of commands, and the read commands' help loads
no Temporal SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from client.embedded import EmbeddedServer
from tests.cli import cli_env, ponder
from tests.test_embedded import server_pids, wait_until

READ_COMMANDS = ("status", "runs", "report", "export")
"""Commands whose ``--help`` (and whose read of an ended run) import no Temporal SDK."""


def test_the_read_commands_help_imports_no_sdk() -> None:
    probe = (
        "import sys\n"
        "from client.cli import cli\n"
        f"for name in {READ_COMMANDS!r}:\n"
        "    try:\n"
        "        cli.main([name, '--help'], standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    heavy = sorted(m for m in sys.modules if m.startswith(('temporalio', 'rich', "
        "'jinja2', 'numpy')))\n"
        "    print('LOADED', name, heavy[:3])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = [line for line in out.splitlines() if line.startswith("LOADED")]
    assert loaded == [f"LOADED {name} []" for name in READ_COMMANDS], loaded


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
    # Then the idle period ends: the keeper kills the server, then forgets it (server.json).
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
