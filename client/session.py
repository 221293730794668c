"""Where a ``ponder`` command gets its client and, in embedded mode, its worker."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from pathlib import Path

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.enums.v1 import TaskQueueType, WorkerStatus
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, ListWorkersRequest
from temporalio.client import Client
from temporalio.service import RPCError

from activities.config import Settings
from activities.errors import NoWorkerError
from client.call_routes import RouteLookups
from client.connect import connect
from client.embedded import EmbeddedServer, child_environment
from client.sigterm import on_sigterm, sigterm_through_the_loop, terminated
from client.worker_fingerprint import for_configuration, worker_fingerprint
from client.worker_liveness import Heartbeat, serves
from client.worker_record import (
    queue_worker,
    read_record,
    record_path,
    running_background_worker,
)

__all__ = [
    "Session",
    "keep_background_worker",
    "linger_background_worker",
    "on_sigterm",
    "open_session",
    "query_answerer",
    "reclaim_background_worker",
    "release_background_worker",
    "spawn_background_worker",
    "terminated",
]

NO_WORKER_WAIT_S = 5.0
BACKGROUND_START_WAIT_S = 60.0
"""How long a read waits for a background worker whose process lives but has not polled yet (a
worker that just spawned imports for a second or two on a quiet machine, far longer on a busy
one)."""
IN_PROCESS_SHUTDOWN = timedelta(seconds=3)
"""A command's own worker lets calls in flight finish this long at exit, then hands them back to
Temporal (retried elsewhere): a command must exit within seconds, not wait out a long call."""


@dataclass
class Session:
    client: Client
    settings: Settings
    embedded: bool
    routes: RouteLookups = field(default_factory=RouteLookups)
    """What this session saw of provider queues: runs started in a burst ask once."""
    background: bool = False
    """Embedded, and its configuration's background worker takes its runs: no worker here.
    ``client.runs.start_run`` confirms that worker after each start (``keep_background_worker``)."""


# -- SIGTERM: through the event loop (client.sigterm) -----------------------------------------
_sigterm_through_the_loop = sigterm_through_the_loop


# -- workers -------------------------------------------------------------------------------


async def has_worker(client: Client, task_queue: str) -> bool:
    """Whether a live worker serves ``task_queue`` (``client.worker_liveness`` decides)."""
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    polls = [_seconds(poller.last_access_time) for poller in described.pollers]
    heartbeats: list[Heartbeat] | None = None
    with contextlib.suppress(RPCError):  # an older server: no worker heartbeats
        listed = await client.workflow_service.list_workers(
            ListWorkersRequest(namespace=client.namespace, query=f"TaskQueue = '{task_queue}'")
        )
        heartbeats = [
            Heartbeat(
                running=info.worker_heartbeat.status == WorkerStatus.WORKER_STATUS_RUNNING,
                at=_seconds(info.worker_heartbeat.heartbeat_time),
                interval_s=info.worker_heartbeat.elapsed_since_last_heartbeat.ToTimedelta().total_seconds(),
            )
            for info in listed.workers_info
        ]
    return serves(polls, heartbeats, time.time())


def _seconds(timestamp: Timestamp) -> float:
    return timestamp.ToDatetime(tzinfo=UTC).timestamp()


async def wait_for_worker(client: Client, task_queue: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await has_worker(client, task_queue):
        if time.monotonic() > deadline:
            raise NoWorkerError(
                f"no worker polls task queue {task_queue!r}: start `ponder worker` "
                "(or pass --local-worker to run one in this process)"
            )
        await asyncio.sleep(0.5)


async def _runs_open(client: Client, task_queue: str) -> bool:
    query = f'TaskQueue="{task_queue}" AND ExecutionStatus="Running"'
    try:
        return (await client.count_workflows(query)).count > 0
    except RPCError:
        return True


def _import_worker() -> None:
    import worker.worker  # noqa: F401


@contextlib.asynccontextmanager
async def own_worker(client: Client, settings: Settings) -> AsyncIterator[None]:
    """This command's own worker on the task queue for the block. The worker (every workflow
    and activity) is imported here, by a command that runs one, and by no other."""
    from worker.worker import WorkerOptions, running_worker

    options = WorkerOptions(
        settings.task_queue, graceful_shutdown=IN_PROCESS_SHUTDOWN, embedded=True
    )
    async with running_worker(client, settings, options):
        yield


@contextlib.asynccontextmanager
async def open_session(
    settings: Settings, *, local_worker: bool = False, worker: bool = True, run: str | None = None
) -> AsyncIterator[Session]:
    """A connected client; in embedded mode (no TEMPORAL_ADDRESS) with an in-process worker,
    unless the configuration's background worker lives (then it takes the runs, and the command
    is a client only). A command that ran its own worker leaves a background one for the
    server's idle period (``linger_background_worker``), so the commands after it are clients.

    In embedded mode the session's settings are on their configuration's task queue
    (``client.worker_fingerprint``): the runs it starts, its worker and the background worker it
    may leave all use that queue, which no worker of another configuration polls.

    A command on an existing run passes its id as ``run``: the run is described before any
    worker is imported, started or waited for, so a run that does not exist is refused
    (``NOT_FOUND``, ``run.not_found``) in a client's round trip, not a worker's start and stop."""
    with _sigterm_through_the_loop():
        if settings.temporal_address:
            client = await connect(settings)
            if run is not None:
                await client.get_workflow_handle(run).describe()
            if local_worker:
                async with own_worker(client, settings):
                    yield Session(client, settings, embedded=False)
                return
            if worker:
                await wait_for_worker(client, settings.task_queue, NO_WORKER_WAIT_S)
            yield Session(client, settings, embedded=False)
            return
        settings = for_configuration(settings)
        server = EmbeddedServer(settings.home)
        # A live background worker of this configuration takes the runs, so the command is a
        # client only: it neither imports nor starts a worker (most of a quick command's time).
        background = worker and running_background_worker(settings) is not None
        own = worker and not background
        # The worker's modules (about a second of CPU) load while the server starts. For a
        # command on a run with the server up, once the run is known to exist: an import
        # cannot be stopped, and the refusal would wait for it.
        later = run is not None and server.up()
        importing = (
            asyncio.create_task(asyncio.to_thread(_import_worker)) if own and not later else None
        )
        async with server.lease(idle_s=settings.server_idle_s) as info:
            if importing is not None:
                await importing
            client = await connect(settings, info.address)
            if run is not None:
                await client.get_workflow_handle(run).describe()
            if not own:
                yield Session(client, settings, embedded=True, background=background)
                return
            try:
                async with own_worker(client, settings):
                    yield Session(client, settings, embedded=True)
            except asyncio.CancelledError:
                # Terminated mid-command: runs this worker served go on in a background one.
                if terminated() and await _runs_open(client, settings.task_queue):
                    spawn_background_worker(settings)
                raise
            linger_background_worker(settings)


@contextlib.asynccontextmanager
async def query_answerer(session: Session, task_queue: str | None = None) -> AsyncIterator[None]:
    """Within the block a query on ``task_queue`` (the run's; default the session's) gets
    answered, at the least cost.

    A query is answered by a worker polling the run's queue. In embedded mode the home's
    background worker does when its process lives and the queue shows a live worker (it polls:
    one just spawned may not yet), so nothing starts here and a read of a live run costs its
    round trips alone; else a worker runs in this process for the block, as every command's did.
    The poller list alone cannot decide it: a command's own worker that just stopped is listed
    for a few seconds, and a query sent then fails ("no poller seen for task queue recently").
    A cluster waits for a worker (``NoWorkerError`` after ``NO_WORKER_WAIT_S``), as
    ``open_session`` does.

    A run on another configuration's queue (started from another directory, or with another
    ``--config``) is answered by a worker of that configuration only: a worker of this one
    would take that run's calls too. Without a live one the read is refused, saying where to
    run it from.
    """
    client, settings = session.client, session.settings
    queue = task_queue or settings.task_queue
    if not session.embedded:
        await wait_for_worker(client, queue, NO_WORKER_WAIT_S)
        yield
        return
    if queue != settings.task_queue:
        if not await _serves_or_starts(client, settings, queue):
            raise NoWorkerError(
                f"the run is on task queue {queue!r}, which belongs to another configuration "
                f"than this one ({settings.task_queue!r}), and no worker of that configuration "
                "runs: run the command with the configuration that started the run (from its "
                "directory, or with its --config), which starts one"
            )
        yield
        return
    if running_background_worker(settings) is not None and await has_worker(
        client, settings.task_queue
    ):
        yield
        return
    async with own_worker(client, settings):
        yield


async def _serves_or_starts(client: Client, settings: Settings, queue: str) -> bool:
    """Whether a worker serves ``queue``, or will once the home's background worker for it,
    whose process lives, has started polling."""
    if await has_worker(client, queue):
        return True
    if queue_worker(settings.home, queue) is None:
        return False
    with contextlib.suppress(NoWorkerError):
        await wait_for_worker(client, queue, BACKGROUND_START_WAIT_S)
        return True
    return False


# -- the background worker -----------------------------------------------------------------


@contextlib.contextmanager
def _record_locked(settings: Settings) -> Iterator[Path]:
    record = record_path(settings)
    record.parent.mkdir(parents=True, exist_ok=True)
    with record.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield record
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_record(record: Path, pid: int, fingerprint: str) -> None:
    record.write_text(json.dumps({"pid": pid, "fingerprint": fingerprint}) + "\n")


def spawn_background_worker(settings: Settings, idle_seconds: int = 600) -> int:
    """Reuse this home's background worker for this configuration, else start ``ponder worker
    --embedded --exit-when-idle N --task-queue QUEUE --config FILE`` detached; returns its pid.

    Workers of other configurations are left alone: each polls its own configuration's queue
    and exits once that queue has been idle ``idle_seconds``, as the server keeps its idle
    period, so several serve at once and none takes another's runs."""
    settings = for_configuration(settings)
    fingerprint = worker_fingerprint(settings)
    with _record_locked(settings) as record:
        running = running_background_worker(settings)
        if running is not None:
            return running
        log_dir = settings.home / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        # The worker loads the very file this command did (not whatever its cwd or environment
        # would find), so it serves the configuration its fingerprint names.
        config = ["--config", str(settings.config_file.absolute())] if settings.config_file else []
        with (log_dir / "background-worker.out").open("ab") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "client",  # `ponder worker`: python -m worker serves a cluster only
                    "worker",
                    "--embedded",
                    "--exit-when-idle",
                    str(idle_seconds),
                    "--task-queue",
                    settings.task_queue,
                    *config,
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                env=child_environment(settings, worker=True),
            )
        # Take the child's lease now: this process may exit (and drop its own lease) before the
        # child gets to it, and the last lease out stops the server.
        EmbeddedServer(settings.home).add_lease(process.pid)
        _write_record(record, process.pid, fingerprint)
        return process.pid


def linger_background_worker(settings: Settings) -> None:
    """After a command that ran its own worker, leave one in the background for the server's
    idle period, so the next command of this configuration is a client only (``open_session``).
    With no idle period (``server_idle_s`` 0) nothing lingers, as the server does not."""
    if settings.server_idle_s > 0:
        spawn_background_worker(settings, idle_seconds=max(1, math.ceil(settings.server_idle_s)))


def keep_background_worker(settings: Settings) -> None:
    """After a client-only session started a run: the background worker it counted on may have
    released its record meanwhile (idle, about to exit); then one starts for the run. Under the
    record's lock, as that release is, so the worker either sees the run or is replaced."""
    spawn_background_worker(settings)


def release_background_worker(settings: Settings) -> str | None:
    """An idle background worker (this process) stops being the one to reuse; returns the
    configuration fingerprint its record held (for ``reclaim``).

    It then counts the open runs once more before exiting: a command that read the record
    before this started its run first, so that count sees it (and ``reclaim`` undoes this).
    """
    with _record_locked(settings) as record:
        held = read_record(record)
        if held.get("pid") != os.getpid():
            return None
        record.unlink(missing_ok=True)
        fingerprint = held.get("fingerprint")
        return fingerprint if isinstance(fingerprint, str) else None


def reclaim_background_worker(settings: Settings, fingerprint: str | None) -> None:
    """Be the background worker to reuse again, unless another one took the place meanwhile."""
    with _record_locked(settings) as record:
        if running_background_worker(settings) is None:
            _write_record(record, os.getpid(), fingerprint or "")
