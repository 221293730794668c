"""Whether a live worker serves a task queue, from what the server lists about it.

The server's answers come two ways: the SDK's RPCs (``client.session.has_worker``) and its HTTP
API (``client.server_http``, which ``ponder status`` uses to answer without importing the SDK).
Both reduce them to the plain values below, and this module decides. No I/O, no SDK import.

Pollers alone cannot tell: the server lists one for minutes after its worker is gone, and a
live idle worker's last poll can be a minute old. A poll started in the last few seconds does
show a live worker (one just started, say). Otherwise workers' own heartbeats decide (ponder's
workers send one every ``WORKER_HEARTBEAT``): a worker is gone once its heartbeat is two
intervals late, or it said it is shutting down. Without heartbeats (an older server or SDK), a
poller seen in the last ``POLL_STALE_S`` counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["POLL_FRESH_S", "POLL_STALE_S", "Heartbeat", "serves"]

POLL_FRESH_S = 5.0
POLL_STALE_S = 90.0
"""A live worker re-polls at least every long-poll interval (a minute)."""
HEARTBEAT_SLACK_S = 2.0
SDK_MAX_HEARTBEAT_S = 60.0
"""The longest worker-heartbeat interval the SDK allows (also its default, which a worker not
started by ponder uses): the bound to assume until a second heartbeat shows the real one."""


@dataclass(frozen=True)
class Heartbeat:
    running: bool
    """The worker reported itself running (not shutting down)."""
    at: float
    """When it was sent, in epoch seconds."""
    interval_s: float
    """Seconds since the worker's previous heartbeat; 0 for its first."""


def serves(polls: Sequence[float], heartbeats: Sequence[Heartbeat] | None, now: float) -> bool:
    """Whether a live worker serves the queue, given its pollers' last poll times (epoch
    seconds) and its workers' heartbeats (None: the server lists none)."""
    if any(now - polled <= POLL_FRESH_S for polled in polls):
        return True
    if not heartbeats:
        return any(now - polled <= POLL_STALE_S for polled in polls)
    for beat in heartbeats:
        # A first heartbeat reports no interval; assuming ponder's 5 s would call a worker with
        # the SDK's default 60 s heartbeat gone after 12 s.
        allowed = 2 * (beat.interval_s or SDK_MAX_HEARTBEAT_S) + HEARTBEAT_SLACK_S
        if beat.running and now - beat.at <= allowed:
            return True
    return False
