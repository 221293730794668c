"""One real worker process that hostile input is sent to, and the three things every hostile test
asserts: the hostile run ends with its code (or is refused before it starts)
within a bounded time, a probe ``Ask`` on the same worker still completes within 10 s, and the
worker still exits within 10 s of SIGTERM afterwards.

Input goes through the real ``temporal`` binary, the way an operator or a script reaches a
workflow without ponder's models::

    async with shared_worker(client, settings, server_address) as worker:
        await worker.start(CAMPAIGN, "c-redos", json.dumps(document))
        await worker.probe()  # while the hostile run is processed
        error = await worker.failure("c-redos")
        assert error.type == "campaign.invalid"
    # leaving the block: SIGTERM, and the worker must be gone within 10 s

``ponder.toml`` text for the worker (providers, notifiers, roots) is passed as ``toml``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from activities.config import Settings
from client.embedded import find_temporal_binary
from tests.worker_process import start_worker
from workflows.ask_types import AskInput
from workflows.names import ASK

__all__ = ["PROBE_SECONDS", "SIGTERM_SECONDS", "SharedWorker", "shared_worker", "temporal"]

PROBE_SECONDS = 10.0
SIGTERM_SECONDS = 10.0


async def temporal(*args: str, timeout: float = 30) -> tuple[int, str]:
    """The real ``temporal`` binary (asyncio, so the test's event loop keeps going)."""
    process = await asyncio.create_subprocess_exec(
        find_temporal_binary(),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


@dataclass
class SharedWorker:
    """A ``python -m worker`` process on its own task queue, and the client that reaches it."""

    client: Client
    address: str
    queue: str
    settings: Settings
    process: asyncio.subprocess.Process
    log: Path

    def _target(self) -> list[str]:
        return ["--address", self.address, "--namespace", "default"]

    async def start(self, workflow_type: str, workflow_id: str, *inputs: str) -> None:
        """``temporal workflow start`` with each of ``inputs`` as one ``--input`` JSON text."""
        args = ["workflow", "start", *self._target(), "--task-queue", self.queue]
        args += ["--type", workflow_type, "--workflow-id", workflow_id]
        for value in inputs:
            args += ["--input", value]
        code, output = await temporal(*args)
        assert code == 0, output

    async def signal(self, workflow_id: str, name: str, *inputs: str) -> None:
        """``temporal workflow signal`` (fire and forget: the CLI exits 0 once it is delivered)."""
        args = ["workflow", "signal", *self._target(), "--workflow-id", workflow_id]
        args += ["--name", name]
        for value in inputs:
            args += ["--input", value]
        code, output = await temporal(*args)
        assert code == 0, output

    async def update(self, workflow_id: str, name: str, *inputs: str) -> tuple[int, str]:
        """``temporal workflow update execute``: its exit code and output (a refusal exits 1)."""
        args = ["workflow", "update", "execute", *self._target(), "--workflow-id", workflow_id]
        args += ["--name", name]
        for value in inputs:
            args += ["--input", value]
        return await temporal(*args)

    def handle(self, workflow_id: str) -> WorkflowHandle:
        return self.client.get_workflow_handle(workflow_id)

    async def failure(self, workflow_id: str, *, within: float = 30) -> ApplicationError:
        """The run's coded failure, which must come within ``within`` seconds."""
        try:
            await asyncio.wait_for(self.handle(workflow_id).result(), within)
        except WorkflowFailureError as error:
            cause = error.cause
            assert isinstance(cause, ApplicationError), cause
            assert cause.type, f"uncoded failure: {cause}"
            return cause
        raise AssertionError(f"{workflow_id} completed; a coded failure was expected")

    async def probe(self, within: float = PROBE_SECONDS) -> float:
        """A sim ``Ask`` started now on this worker completes within ``within`` seconds (the
        worker is not frozen); returns how long it took."""
        began = time.monotonic()
        workflow_id = f"probe-{uuid.uuid4().hex[:10]}"
        handle = await self.client.start_workflow(
            ASK,
            AskInput(question="probe: are you still serving?", model="sim:default"),
            id=workflow_id,
            task_queue=self.queue,
        )
        try:
            await asyncio.wait_for(handle.result(), within)
        except TimeoutError:
            raise AssertionError(
                f"a probe Ask on the same worker did not finish within {within:.0f} s"
            ) from None
        return time.monotonic() - began

    def worker_log(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


async def _polling(client: Client, queue: str, within: float) -> None:
    """Until a worker polls ``queue``: a workflow started before would only wait for it."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    deadline = time.monotonic() + within
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    while time.monotonic() < deadline:
        response = await client.workflow_service.describe_task_queue(request)
        if response.pollers:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"no worker polled {queue} within {within:.0f} s")


@contextlib.asynccontextmanager
async def shared_worker(
    client: Client, settings: Settings, address: str, *, toml: str = ""
) -> AsyncIterator[SharedWorker]:
    """A worker process for one hostile test; leaving the block sends SIGTERM and asserts the
    worker is gone within 10 s (a frozen or wedged worker ignores it)."""
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "ponder.toml").write_text(toml)
    queue = f"hostile-{uuid.uuid4().hex[:12]}"
    log = settings.home / "worker-output.log"
    process = await start_worker(settings, address, queue, output=log)
    worker = SharedWorker(client, address, queue, settings, process, log)
    try:
        await _polling(client, queue, within=60)
        yield worker
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), SIGTERM_SECONDS)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise AssertionError(
                    f"the worker did not exit within {SIGTERM_SECONDS:.0f} s of SIGTERM"
                ) from None


def dumps(value: object) -> str:
    """Compact JSON for ``--input``."""
    return json.dumps(value, separators=(",", ":"))
