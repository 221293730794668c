"""Commands on an existing run (``watch``, ``extend``, ``cancel``, ``status``) given an id no run
has: refused ``run.not_found`` (exit 2, one line) before any worker is imported, started or
waited for, in embedded mode and on a cluster without a worker."""

from __future__ import annotations

from pathlib import Path

from tests.cli import cli_env, one_server, ponder

COMMANDS = (
    ["watch"],
    ["extend", "--calls", "5"],
    ["extend", "--calls", "5", "--detach"],
    ["cancel"],
    ["status"],
)


def refused_as_not_found(command: list[str], code: int, err: str) -> None:
    assert code == 2, (command, err)
    assert "run.not_found" in err and "no such run" in err, (command, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (command, err)


async def test_embedded_no_such_run_starts_no_worker(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    async with one_server(tmp_path):
        for command in COMMANDS:
            done = await ponder(*command, "no-such-run", env=env)
            refused_as_not_found(command, done.code, done.err)
    # What a worker leaves in the home when it starts: its log and its run directories' record.
    assert not (tmp_path / "logs" / "worker.log").exists()
    assert not (tmp_path / "workers").exists()


async def test_on_a_cluster_without_a_worker_no_such_run_is_said_at_once(
    tmp_path: Path, server_address: str
) -> None:
    """Not "no worker polls" after waiting for one: the run is looked up first."""
    env = cli_env(tmp_path, TEMPORAL_ADDRESS=server_address)
    for command in COMMANDS:
        done = await ponder(*command, "no-such-run", env=env)
        refused_as_not_found(command, done.code, done.err)
