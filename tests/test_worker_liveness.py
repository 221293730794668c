"""Whether a live worker serves a queue, decided from the server's poller list and heartbeats
(``client.worker_liveness``: the SDK path and the HTTP path both feed it)."""

from __future__ import annotations

from client.worker_liveness import POLL_FRESH_S, POLL_STALE_S, Heartbeat, serves

NOW = 1_000_000.0


def test_a_poll_started_seconds_ago_shows_a_live_worker() -> None:
    assert serves([NOW - POLL_FRESH_S + 1], [Heartbeat(False, NOW - 600, 5)], NOW)


def test_without_heartbeats_a_poller_counts_until_it_is_stale() -> None:
    assert serves([NOW - POLL_STALE_S + 1], None, NOW)
    assert serves([NOW - POLL_STALE_S + 1], [], NOW)
    assert not serves([NOW - POLL_STALE_S - 1], None, NOW)
    assert not serves([], None, NOW)


def test_heartbeats_decide_once_the_polls_are_old() -> None:
    old_poll = [NOW - 60]  # a live idle worker's long poll, or a gone worker's last one
    assert serves(old_poll, [Heartbeat(True, NOW - 11, 5)], NOW)  # within two intervals + 2 s
    assert not serves(old_poll, [Heartbeat(True, NOW - 13, 5)], NOW)  # two intervals late
    assert not serves(old_poll, [Heartbeat(False, NOW - 1, 5)], NOW)  # shutting down
    # One live worker among gone ones is enough.
    gone, live = Heartbeat(True, NOW - 300, 5), Heartbeat(True, NOW - 1, 5)
    assert serves(old_poll, [gone, live], NOW)


def test_a_first_heartbeat_allows_the_sdks_longest_interval() -> None:
    """A first heartbeat reports no interval: a worker with the SDK's default 60 s heartbeat is
    not called gone after ponder's 5 s."""
    assert serves([], [Heartbeat(True, NOW - 100, 0)], NOW)
    assert not serves([], [Heartbeat(True, NOW - 123, 0)], NOW)
