"""How much history one workflow may plan for: Temporal's limits and the share ponder keeps.

Pure constants, in a module of their own so the plan validator can state them without loading
the tournament's preflight and its types.

Temporal terminates a workflow whose history passes 50,000 events or 50 MB. A run may grow past
its plan (pauses, extensions, transport retries stay out of history but signals do not), so a
plan whose estimate passes half of either limit is refused before it runs.
"""

from __future__ import annotations

__all__ = [
    "HISTORY_BYTES_BUDGET",
    "HISTORY_EVENTS_BUDGET",
    "HISTORY_SHARE",
    "TEMPORAL_HISTORY_BYTES",
    "TEMPORAL_HISTORY_EVENTS",
]

TEMPORAL_HISTORY_EVENTS = 50_000
TEMPORAL_HISTORY_BYTES = 50 * 1024 * 1024
HISTORY_SHARE = 0.5
HISTORY_EVENTS_BUDGET = int(TEMPORAL_HISTORY_EVENTS * HISTORY_SHARE)
HISTORY_BYTES_BUDGET = int(TEMPORAL_HISTORY_BYTES * HISTORY_SHARE)
