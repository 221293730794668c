"""``heartbeating``: a long activity beats within its timeout, a short one sends nothing."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from temporalio.testing import ActivityEnvironment

from activities.heartbeats import heartbeating


async def test_a_block_shorter_than_the_heartbeat_interval_sends_no_heartbeat() -> None:
    """The first heartbeat comes one interval (a third of the timeout) in: a fast model call
    sends none (no call into the worker's core, no RPC), a longer one beats before it ends."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=1))
    beats: list[tuple[object, ...]] = []
    env.on_heartbeat = lambda *details: beats.append(details)

    async def block(seconds: float) -> None:
        async with heartbeating():
            await asyncio.sleep(seconds)

    await env.run(block, 0.01)
    assert beats == []
    await env.run(block, 0.8)  # the 1/3 s beat's timer is due before the block's end
    assert beats
