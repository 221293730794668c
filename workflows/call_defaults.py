"""Worker-wide defaults for the activity options workflows state at each call site.

``ponder worker --heartbeat-timeout`` sets these. Workflows read them through
``imports_passed_through`` so the sandbox sees the worker's values. They only shape new
activity schedules; Temporal does not compare timeouts on replay, so changing them between
workers is safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

__all__ = ["CALL_DEFAULTS", "CallDefaults"]


@dataclass
class CallDefaults:
    heartbeat_timeout: timedelta = timedelta(seconds=30)


CALL_DEFAULTS = CallDefaults()
