"""The kinds and states of a run, as ``ponder runs`` and ``ponder status`` name them.

Plain constants in a module of their own: ``ponder runs`` declares its ``--kind`` and
``--status`` choices from them, and its ``--help`` should not build the pydantic rows of
``client.run_list`` to show them.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["ENDED", "KINDS", "STATUSES", "Kind"]

Kind = Literal["ask", "mutate", "tournament", "rank", "plan", "campaign"]
KINDS: tuple[str, ...] = get_args(Kind)
STATUSES = (
    "running",
    "awaiting_budget",
    "paused",
    "completed",
    "failed",
    "cancelled",
    "terminated",
    "timed_out",
)
ENDED = ("completed", "failed", "cancelled", "terminated", "timed_out")
"""The states a run never leaves: what the run store says of such a run is final."""
