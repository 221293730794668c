"""Whether a worker polls a task queue now: the client asks before it routes a provider's calls
to its rate-limited queue, and a run asks when a routed call has waited ``UNROUTABLE_AFTER_S``
without starting (``workflows/model_calls.py``): a live but busy queue is waited on, a queue no
worker polls fails the call with ``provider.unroutable``.

Also the secret in a session queue's name (``workflows/call_options.py``): random, made by the
first ``ponder mcp`` of a ponder home, kept in that home readable by its owner only, and read by
whatever starts runs for that owner (its ``ponder mcp`` tools, CLI, scripts). Deleting the file
rotates it: the next ``ponder mcp`` polls a new queue.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from workflows.activity_contracts import QUEUE_POLLED
from workflows.call_options import SESSION_SECRET

__all__ = [
    "POLLER_FRESH_S",
    "QUEUE_POLLED",
    "SESSION_SECRET_FILE",
    "queue_polled",
    "session_secret",
    "task_queue_polled",
]

POLLER_FRESH_S = 90.0
"""A queue's poller seen this recently is live: an idle worker re-polls about every minute, and
the server lists a gone one for minutes (routing there would leave calls waiting)."""


SESSION_SECRET_FILE = "mcp-session.secret"


def session_secret(home: Path, *, create: bool = False) -> str | None:
    """This home's session-queue secret; None when there is none yet (or it is unreadable or
    malformed) and ``create`` is false. Written whole (mode 0600) and linked into place, so a
    racing reader sees all of it or nothing, and two racing writers agree on the first."""
    path = home / SESSION_SECRET_FILE
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        text = None
    except OSError:
        return None
    if text is not None or not create:
        return text if text is not None and SESSION_SECRET.fullmatch(text) else None
    home.mkdir(parents=True, exist_ok=True)
    draft = home / f".{SESSION_SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(16) + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:
        pass  # another process made it first: theirs is the secret
    finally:
        draft.unlink()
    return session_secret(home)


async def queue_polled(client: Client, task_queue: str) -> bool:
    """Whether a worker polls ``task_queue`` for activities now (not one long gone)."""
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    now = time.time()
    return any(
        not p.HasField("last_access_time") or now - p.last_access_time.seconds <= POLLER_FRESH_S
        for p in response.pollers
    )


@activity.defn(name=QUEUE_POLLED)
async def task_queue_polled(task_queue: str) -> bool:
    """``queue_polled`` through the worker's own client (the queue name is the run's routing,
    already held to ``<queue>.provider.<name>`` by ``CallOptions``)."""
    return await queue_polled(activity.client(), task_queue)
