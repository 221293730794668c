"""How a run's model calls are scheduled: part of the run's input, never a worker setting.

Routing and timeouts shape the commands a workflow sends, so they come from the input (and so
from history): every worker that runs, continues or replays a run schedules the same commands,
whatever flags it was started with. ``ponder worker --rate-limit P=N/s`` serves provider P's
calls on ``provider_task_queue(queue, P)``; the client that starts a run sees that queue polled
and names it in ``provider_queues``, where the run keeps it.

Pure: pydantic only.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from workflows.inputs import StrictModel
from workflows.wire_replay import WireReplay

__all__ = [
    "DEFAULT_HEARTBEAT_TIMEOUT_S",
    "DEFAULT_SCHEDULE_TO_CLOSE_S",
    "FALLBACK_SCHEDULE_TO_CLOSE_S",
    "CallOptions",
    "provider_of",
    "provider_task_queue",
]

DEFAULT_HEARTBEAT_TIMEOUT_S = 30.0
DEFAULT_SCHEDULE_TO_CLOSE_S: dict[str, float] = {"judge": 20 * 60.0}
"""Per request role; every other role gets ``FALLBACK_SCHEDULE_TO_CLOSE_S``."""
FALLBACK_SCHEDULE_TO_CLOSE_S = 60 * 60.0


def provider_task_queue(task_queue: str, provider: str) -> str:
    """The task queue whose worker rate-limits ``provider``'s calls (``ponder.provider.P``)."""
    return f"{task_queue}.provider.{provider}"


def provider_of(model_spec: str) -> str:
    """The provider (endpoint) name of a ``provider:model`` spec."""
    return model_spec.partition(":")[0].strip()


class CallOptions(StrictModel):
    """Scheduling of every model call of one run."""

    heartbeat_timeout_s: float = Field(
        default=DEFAULT_HEARTBEAT_TIMEOUT_S,
        ge=1.0,
        le=600.0,
        description="seconds without a heartbeat before a model call is retried elsewhere",
    )
    schedule_to_close_s: float | None = Field(
        default=None,
        gt=0.0,
        le=7 * 24 * 3600.0,
        description="one call's whole time, retries included; default 20 min judge, 60 min others",
    )
    provider_queues: dict[str, str] = Field(
        default={},
        description="provider name -> task queue of the worker that rate-limits its calls; "
        "the client fills it from the queues polled when the run starts",
    )
    replay: WireReplay | None = Field(
        default=None,
        description="answer every call from a recorded run's raw events (wire replay)",
    )

    def task_queue_for(self, model_spec: str) -> str | None:
        """The queue ``model_spec``'s calls go to; None: the workflow's own queue."""
        return self.provider_queues.get(provider_of(model_spec))

    def heartbeat_timeout(self) -> timedelta:
        return timedelta(seconds=self.heartbeat_timeout_s)

    def schedule_to_close(self, role: str) -> timedelta:
        seconds = self.schedule_to_close_s or DEFAULT_SCHEDULE_TO_CLOSE_S.get(
            role, FALLBACK_SCHEDULE_TO_CLOSE_S
        )
        return timedelta(seconds=seconds)
