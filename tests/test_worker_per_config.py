"""One worker per configuration on the embedded server: each configuration's runs go to a task
queue named after its digest, so a command run with another configuration (another directory's
ponder.toml) neither retires the worker of a run it did not start nor lets its own worker take
that run's calls."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.config import load_settings
from client.worker_fingerprint import configuration_queue, for_configuration
from client.worker_record import queue_worker
from tests.cli import Done, cli_env, finish, one_server
from tests.fakes import FakeProvider
from tests.test_providers import run_ask
from tests.test_worker_cli import cmdline, processes_using

SLOW_SIM = "sim:default,latency=fixed:1500"
SLOWER_SIM = "sim:default,latency=fixed:3000"
"""A quick tournament's phases take 12 s or more: longer than a start under load."""


async def ponder_in(where: Path, *args: str, env: dict[str, str], timeout: float = 120) -> Done:
    """``ponder ARGS`` run from the directory ``where`` (whose ponder.toml, if any, it loads)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "client",
        *args,
        cwd=where,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    return await finish(process, timeout)


def declare(directory: Path, provider: str, fake: FakeProvider) -> Path:
    directory.mkdir()
    config = directory / "ponder.toml"
    config.write_text(f'[providers.{provider}]\nkind = "openai"\nbase_url = "{fake.url}/v1"\n')
    return config


def background_queues(home: Path) -> dict[int, str]:
    """Live background workers of ``home``: pid -> the task queue each polls."""
    found = {}
    for pid in processes_using(home):
        argv = cmdline(pid)
        if "--exit-when-idle" in argv:
            found[pid] = argv[argv.index("--task-queue") + 1]
    return found


def summary_of(home: Path, run_id: str) -> dict[str, object]:
    try:
        data = json.loads((home / "runs" / run_id / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


async def until_ended(home: Path, run_ids: list[str], timeout: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        states = {r: summary_of(home, r).get("status") for r in run_ids}
        if all(states.values()):
            return states
        assert time.monotonic() < deadline, states
        await asyncio.sleep(0.3)


def test_a_configuration_has_one_queue_and_another_configuration_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue is a function of what the worker would load, not of where the file lies."""
    monkeypatch.delenv("TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv("PONDER_TASK_QUEUE", raising=False)
    home = tmp_path / "home"
    one, two, three = (tmp_path / name for name in ("one", "two", "three"))
    for directory, provider in ((one, "myllm"), (two, "myllm"), (three, "other")):
        directory.mkdir()
        (directory / "ponder.toml").write_text(
            f'[providers.{provider}]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        )
    plain = load_settings(home=str(home))
    queues = [
        configuration_queue(load_settings(d / "ponder.toml", home=str(home)))
        for d in (one, two, three)
    ]
    assert queues[0] == queues[1]  # the same content elsewhere: the same workers serve it
    assert len({configuration_queue(plain), queues[0], queues[2]}) == 3
    for queue in queues:
        head, _, digest = queue.rpartition(".")
        assert head == "ponder" and len(digest) == 12 and int(digest, 16) >= 0
    # Idempotent: settings already on their queue stay there; a cluster keeps its own queue.
    placed = for_configuration(plain)
    assert placed.task_queue == configuration_queue(plain)
    assert for_configuration(placed) is placed and configuration_queue(placed) == placed.task_queue
    cluster = plain.model_copy(update={"temporal_address": "127.0.0.1:7233"})
    assert for_configuration(cluster).task_queue == "ponder"
    # A key set since is another configuration (a worker holding the old one would send it).
    before = configuration_queue(plain)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-rotated-0123456789")
    assert configuration_queue(load_settings(home=str(home))) != before
    # No path out of the workers directory from a run's queue name.
    assert queue_worker(home, "../../etc/passwd") is None


async def test_an_unknown_provider_is_one_code_from_the_worker_and_the_cli(
    client: Client, worker_queue: str, tmp_path: Path
) -> None:
    with pytest.raises(WorkflowFailureError) as info:
        await run_ask(client, worker_queue, model="myllm:foo")
    cause = info.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "model.provider_unknown"
    assert "unknown provider 'myllm'" in cause.message and "[providers.NAME]" in cause.message
    refused = await ponder_in(tmp_path, "ask", "hi", "--model", "myllm:foo", env=cli_env(tmp_path))
    assert refused.code == 2 and "model.provider_unknown" in refused.err, refused.err


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_another_directorys_command_leaves_a_detached_run_to_its_own_worker(
    tmp_path: Path, fake: FakeProvider
) -> None:
    """The reproduction: a detached tournament in ``other`` mutates through a provider only
    ``other/ponder.toml`` declares; ``ponder ask`` in ``main`` (no such provider) meanwhile.
    Before, the ask retired the tournament's worker and its own worker took the tournament's
    mutate calls: ``provider.config: ... unknown provider 'myllm'``."""
    home = tmp_path / "home"
    env = cli_env(home)
    other = tmp_path / "other"
    declare(other, "myllm", fake)
    main = tmp_path / "main"
    main.mkdir()
    async with one_server(home):
        started = await ponder_in(
            other, "think", "Name a prime", "--profile", "balanced", "--model", SLOW_SIM,
            "--mutator-model", "myllm:foo", "--run-id", "cfg-tour", "--detach", env=env,
        )  # fmt: skip
        assert started.code == 0, started.err
        (tournament_worker,) = background_queues(home)
        asked = await ponder_in(main, "ask", "unrelated question", env=env)
        assert asked.code == 0, asked.err
        # Found by its id from the other directory, while its own worker serves it.
        shown = await ponder_in(main, "status", "cfg-tour", "--json", env=env)
        assert shown.code == 0, shown.err
        assert json.loads(shown.out)["status"] in ("running", "completed"), shown.out
        states = await until_ended(home, ["cfg-tour"], 120)
        assert states == {"cfg-tour": "completed"}, summary_of(home, "cfg-tour")
        assert tournament_worker in background_queues(home)  # left alone, not retired
        assert "retired" not in (home / "logs" / "worker.log").read_text(errors="replace")
        done = await ponder_in(main, "status", "cfg-tour", env=env)
        assert done.code == 0 and "completed" in done.out, done
        assert {s.body["model"] for s in fake.seen} == {"foo"}  # its mutations went to myllm
        # The ask ran on main's configuration's queue, the tournament on other's.
        ask_queue = configuration_queue(load_settings(home=str(home)))
        tour_queue = background_queues(home)[tournament_worker]
        assert tour_queue != ask_queue and tour_queue.startswith("ponder.")
        record = json.loads((home / "workers" / f"{tour_queue}.json").read_text())
        assert record["pid"] == tournament_worker


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_two_configurations_runs_interleaved_each_on_its_own_worker(
    tmp_path: Path, fake: FakeProvider
) -> None:
    """Runs of two configurations started in turn, each through a provider only its own
    configuration declares, all running at once: both background workers serve side by side,
    and every call reaches the endpoint its configuration names."""
    home = tmp_path / "home"
    env = cli_env(home)
    a, b = tmp_path / "a", tmp_path / "b"
    declare(a, "alpha", fake)
    declare(b, "beta", fake)
    runs = []
    started_at: dict[str, float] = {}
    async with one_server(home):
        for n in range(2):
            for where, provider in ((a, "alpha"), (b, "beta")):
                run_id = f"{provider}-{n}"
                started = await ponder_in(
                    where, "think", f"Task {n}", "--profile", "quick", "--model", SLOWER_SIM,
                    "--mutator-model", f"{provider}:m{n}", "--run-id", run_id, "--detach",
                    env=env,
                )  # fmt: skip
                assert started.code == 0, started.err
                started_at[run_id] = time.time()
                runs.append(run_id)
        queues = background_queues(home)
        assert len(queues) == 2 and len(set(queues.values())) == 2, queues
        states = await until_ended(home, runs, 120)
        assert set(states.values()) == {"completed"}, {r: summary_of(home, r) for r in runs}
        assert {s.body["model"] for s in fake.seen} == {"m0", "m1"}
        # Interleaved: each run was started while the other configuration's previous one ran.
        for earlier, later in itertools.pairwise(runs):
            ended = summary_of(home, earlier)["completed_at"]
            assert isinstance(ended, str)
            assert started_at[later] < datetime.fromisoformat(ended).timestamp(), (earlier, later)
        # Each mutation reached the endpoint through its own configuration's provider.
        for run_id in runs:
            lines = (home / "runs" / run_id / "raw-events.jsonl").read_text().splitlines()
            called = {json.loads(line)["provider"] for line in lines}
            assert called == {"sim", run_id.split("-")[0]}, (run_id, called)
        assert set(queues) <= set(background_queues(home))  # both still linger, neither retired


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftover_processes")
async def test_a_read_never_serves_another_configurations_run_with_its_own_worker(
    tmp_path: Path, fake: FakeProvider
) -> None:
    """``status`` of a live tournament whose configuration's worker is gone: from another
    directory it is refused (a worker of this configuration would take the run's calls) and
    says what to do; from the run's own directory it is answered."""
    home = tmp_path / "home"
    env = cli_env(home)
    other = tmp_path / "other"
    declare(other, "myllm", fake)
    main = tmp_path / "main"
    main.mkdir()
    async with one_server(home):
        slow = "sim:default,latency=fixed:20000"  # live for the whole test, however loaded
        started = await ponder_in(
            other, "think", "x", "--model", slow, "--run-id", "lone", "--detach", env=env
        )
        assert started.code == 0, started.err
        ((worker, queue),) = background_queues(home).items()
        os.kill(worker, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while worker in background_queues(home):
            assert time.monotonic() < deadline, "the background worker did not exit"
            await asyncio.sleep(0.2)
        # The server counts the gone worker's last poll as fresh for a few seconds: read until
        # it no longer does.
        while (refused := await ponder_in(main, "status", "lone", env=env)).code == 0:
            assert time.monotonic() < deadline, "a read kept counting the gone worker's poll"
            await asyncio.sleep(0.5)
        assert refused.code == 2, refused
        assert "worker.missing" in refused.err and repr(queue) in refused.err, refused.err
        assert "--config" in refused.err
        answered = await ponder_in(other, "status", "lone", "--json", env=env)
        assert answered.code == 0, answered.err
        assert json.loads(answered.out)["status"] == "running", answered.out
