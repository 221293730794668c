"""Whether a worker polls a task queue now: the client asks before it routes a provider's calls
to its rate-limited queue, and a run asks when a routed call has waited ``UNROUTABLE_AFTER_S``
without starting (``workflows/model_calls.py``): a live but busy queue is waited on, a queue no
worker polls fails the call with ``provider.unroutable``.
"""

from __future__ import annotations

import time

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

__all__ = ["POLLER_FRESH_S", "QUEUE_POLLED", "queue_polled", "task_queue_polled"]

QUEUE_POLLED = "task_queue_polled"

POLLER_FRESH_S = 90.0
"""A queue's poller seen this recently is live: an idle worker re-polls about every minute, and
the server lists a gone one for minutes (routing there would leave calls waiting)."""


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
