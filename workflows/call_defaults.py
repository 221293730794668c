"""Worker-wide defaults for the activity options workflows state at each call site.

``ponder worker --heartbeat-timeout`` sets these. Workflows read them through
``imports_passed_through`` so the sandbox sees the worker's values. They only shape new
activity schedules; Temporal does not compare timeouts on replay, so changing them between
workers is safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

__all__ = ["CALL_DEFAULTS", "CallDefaults", "provider_task_queue"]


def provider_task_queue(provider: str) -> str:
    """The task queue whose worker rate-limits ``provider``'s calls."""
    return f"ponder.provider.{provider}"


@dataclass
class CallDefaults:
    heartbeat_timeout: timedelta = timedelta(seconds=30)
    rate_limited: frozenset[str] = frozenset()
    """Providers whose calls go to their own rate-limited task queue (``--rate-limit``)."""

    def task_queue_for(self, model_spec: str) -> str | None:
        provider = model_spec.partition(":")[0]
        return provider_task_queue(provider) if provider in self.rate_limited else None


CALL_DEFAULTS = CallDefaults()
