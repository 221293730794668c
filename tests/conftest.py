"""A real Temporal dev server for the session; each test runs its own worker on a uuid queue."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.config import Endpoint, Settings, load_settings
from client.connect import connect
from client.embedded import DISPATCH_TUNING, find_temporal_binary
from tests.fakes import FakeProvider
from worker.worker import WorkerOptions, running_worker

os.environ.pop("TEMPORAL_ADDRESS", None)
# The suite starts hundreds of Python processes (the CLI, workers, benchmarks, README shells)
# and six xdist workers that each rewrite every test module's asserts: with
# PYTHONDONTWRITEBYTECODE set (some machines set it), each of them compiled everything from
# source again (a collection 12 s of CPU instead of 5). Bytecode caches go to the __pycache__
# directories git ignores, whatever the variable says.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# An embedded server stops with its last user in tests (a test that wants the idle period sets
# it): none outlives the test that started it.
os.environ.setdefault("PONDER_SERVER_IDLE_S", "0")
# The live worker runs workflows unsandboxed (worker.workflow_runner); every worker the suite
# starts, in this process or a child, runs them in the sandbox, so a clock, random or I/O call
# from workflow code fails a test.
os.environ.setdefault("PONDER_WORKFLOW_SANDBOX", "1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first. xdist hands tests out in collection order, so a slow test
    collected late starts when the quick ones are gone and the suite waits on it alone. This is
    longest-first scheduling only if they are handed out one at a time (``--maxschedchunk 1`` in
    the Makefile): in xdist's default first batch of ~80 consecutive tests per worker, two
    workers got every slow test and the suite waited ~370 s on them."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def home_entries(home: Path) -> set[str]:
    """What ``home/.ponder`` holds, two levels deep (``logs``, ``runs/ID``); empty if none."""
    root = home / ".ponder"
    if not root.is_dir():
        return set()
    found = {"."}
    for entry in root.iterdir():
        found.add(entry.name)
        if entry.is_dir() and not entry.is_symlink():
            found.update(f"{entry.name}/{inner.name}" for inner in entry.iterdir())
    return found


@pytest.fixture(scope="session", autouse=True)
def real_home_untouched() -> Iterator[None]:
    """No test writes to the real ``~/.ponder``: a ``ponder`` a test starts gets a home of its
    own (``tests.cli.cli_env``); one started with the suite's own environment, which sets no
    ``PONDER_HOME``, would create ``~/.ponder/logs`` for its log."""
    before = home_entries(Path.home())
    yield
    gained = sorted(home_entries(Path.home()) - before)
    assert not gained, (
        f"the suite wrote to the real {Path.home() / '.ponder'}: {', '.join(gained[:8])}; "
        "give each ponder process a PONDER_HOME of its own (tests.cli.cli_env)"
    )


@pytest.fixture(scope="session")
async def dev_server() -> AsyncIterator[WorkflowEnvironment]:
    # The SDK core waits 5 s for the server to answer; on a loaded 2-core machine a start can
    # miss that (seen: one xdist worker's whole share of the suite erred at setup), so try again.
    for attempt in range(3):
        try:
            env = await WorkflowEnvironment.start_local(
                dev_server_existing_path=find_temporal_binary(),
                dev_server_log_level="warn",
                dev_server_extra_args=list(DISPATCH_TUNING),
                ui=False,
            )
            break
        except RuntimeError as exc:
            if attempt == 2 or "did not start within" not in str(exc):
                raise
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def server_address(dev_server: WorkflowEnvironment) -> str:
    return dev_server.client.service_client.config.target_host


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    base = load_settings(home=str(tmp_path / "home"))
    # The test's own directory is where its plan runs may keep their workspaces.
    return base.model_copy(
        update={"config_file": None, "workspace_roots": [tmp_path], "server_idle_s": 0.0}
    )


@pytest.fixture
async def client(settings: Settings, server_address: str) -> Client:
    return await connect(settings, server_address)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


def with_endpoint(settings: Settings, name: str, endpoint: Endpoint) -> Settings:
    return settings.model_copy(update={"providers": {**settings.providers, name: endpoint}})


@pytest.fixture
async def worker_queue(client: Client, settings: Settings) -> AsyncIterator[str]:
    """A worker on a fresh task queue for this test, with this test's settings."""
    queue = f"test-{uuid.uuid4()}"
    async with running_worker(client, settings, WorkerOptions(task_queue=queue)):
        yield queue


def processes_under(root: Path) -> list[int]:
    """Live processes started for ``root``: a ``PONDER_HOME`` inside it, or it on the command line.

    The embedded dev server gets a minimal environment (no ``PONDER_HOME``), so it is found by
    its ``--db-filename`` argument instead.
    """
    home_prefix = f"PONDER_HOME={root}".encode()
    root_text = str(root).encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            argv = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "Z":
            continue
        if root_text in argv or any(item.startswith(home_prefix) for item in environ):
            pids.append(int(proc.name))
    return pids


def kill_processes_under(root: Path) -> None:
    for pid in processes_under(root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def no_leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Whatever a test leaves running under its tmp_path (a failed assertion included) is killed.

    Detached workers and embedded servers outlive the command that started them by design; a
    test must not leave them running for the rest of the suite.
    """
    # Asked for before the test runs, so tmp_path is torn down after this fixture, not before.
    root = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if root is not None:
        kill_processes_under(root)
