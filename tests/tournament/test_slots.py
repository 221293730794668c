"""Pipelined rounds' call slots (``workflows/tournament/slots.py``), on a plain event loop."""

from __future__ import annotations

import asyncio

from workflows.tournament.slots import Slots, provider_widths


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_first_come_first_served_across_lanes_within_a_run_wide_width() -> None:
    """Runs started before ``pipelined-lane-widths``: the run is as wide as its widest lane."""
    slots = Slots({"mutate": 2, "judge": 2}, run_width=2)
    started: list[str] = []
    release: dict[str, asyncio.Event] = {}

    async def call(name: str, lane: str) -> None:
        async with slots.slot(lane):
            started.append(name)
            release[name] = asyncio.Event()
            await release[name].wait()

    tasks = [asyncio.create_task(call(f"m{i}", "mutate")) for i in range(4)]
    await settle()
    tasks += [asyncio.create_task(call(f"j{i}", "judge")) for i in range(2)]
    await settle()
    assert started == ["m0", "m1"]  # the run is 2 wide
    release["m0"].set()
    await settle()
    # m2 came before the judges: a freed mutate slot goes to it, not to j0.
    assert started == ["m0", "m1", "m2"]
    release["m1"].set()
    release["m2"].set()
    await settle()
    assert started == ["m0", "m1", "m2", "m3", "j0"]
    for name in ("m3", "j0"):
        release[name].set()
    await settle()
    release["j1"].set()
    await asyncio.gather(*tasks)
    assert started[-1] == "j1" and slots.free == 2 and slots.lane_free == {"mutate": 2, "judge": 2}


async def test_each_lane_runs_at_its_own_width_without_a_run_wide_one() -> None:
    slots = Slots({"mutate": 2, "judge": 3})
    started: list[str] = []
    gate = asyncio.Event()

    async def call(name: str, lane: str) -> None:
        async with slots.slot(lane):
            started.append(name)
            await gate.wait()

    names = [(f"m{i}", "mutate") for i in range(3)] + [(f"j{i}", "judge") for i in range(4)]
    tasks = [asyncio.create_task(call(name, lane)) for name, lane in names]
    await settle()
    assert started == ["m0", "m1", "j0", "j1", "j2"]  # 2 + 3 in flight, not 3
    gate.set()
    await asyncio.gather(*tasks)
    assert sorted(started) == sorted(name for name, _ in names)
    assert slots.lane_free == {"mutate": 2, "judge": 3} and slots.free == 5


async def test_a_full_lane_does_not_hold_up_another_lane() -> None:
    slots = Slots({"generate": 1, "judge": 3}, run_width=3)
    order: list[str] = []
    gate = asyncio.Event()

    async def call(name: str, lane: str) -> None:
        async with slots.slot(lane):
            order.append(name)
            await gate.wait()

    calls = [("g0", "generate"), ("g1", "generate"), ("j0", "judge"), ("j1", "judge")]
    tasks = [asyncio.create_task(call(name, lane)) for name, lane in calls]
    await settle()
    assert order == ["g0", "j0", "j1"]  # g1 waits for its lane, j0 and j1 pass it
    gate.set()
    await asyncio.gather(*tasks)
    assert order[-1] == "g1"


async def test_a_cancelled_waiter_gives_up_its_place_and_a_granted_one_its_slot() -> None:
    slots = Slots({"judge": 1})
    await slots.acquire("judge")  # held here
    waiter = asyncio.create_task(slots.acquire("judge"))
    await settle()
    waiter.cancel()  # while it waits
    await settle()
    assert waiter.cancelled() and not slots.waiting and slots.free == 0
    granted = asyncio.create_task(slots.acquire("judge"))
    await settle()
    slots.release("judge")  # grants it at once...
    assert slots.free == 0 and not slots.waiting
    granted.cancel()  # ...but it is cancelled before it runs: the slot comes back
    await settle()
    assert granted.cancelled() and slots.free == 1 and slots.lane_free == {"judge": 1}


def test_a_provider_is_as_wide_as_the_widest_lane_that_calls_it() -> None:
    widths = {"generate": 2, "judge": 3, "mutate": 5}
    one = {"generate": ["sim"], "judge": ["sim"], "mutate": ["sim"]}
    assert provider_widths(widths, one) == {"sim": 5}
    # A panel's judge calls go to several providers; a lane may call none (no such phase).
    split = {"generate": ["openai"], "judge": ["openai", "anthropic"], "mutate": ["local"]}
    assert provider_widths(widths, split) == {"openai": 3, "anthropic": 3, "local": 5}
    assert provider_widths(widths, {}) == {}


async def test_overlapping_lanes_on_one_provider_share_its_width() -> None:
    """A judging phase beside the calls making its candidates: both lanes on one provider
    send it at most the widest lane's calls at once, first come first served."""
    slots = Slots({"generate": 2, "judge": 2}, provider_widths={"sim": 2})
    started: list[str] = []
    release: dict[str, asyncio.Event] = {}

    async def call(name: str, lane: str) -> None:
        async with slots.slot(lane, "sim"):
            started.append(name)
            release[name] = asyncio.Event()
            await release[name].wait()

    tasks = [asyncio.create_task(call(f"g{i}", "generate")) for i in range(3)]
    await settle()
    tasks += [asyncio.create_task(call(f"j{i}", "judge")) for i in range(2)]
    await settle()
    assert started == ["g0", "g1"]  # lanes alone would let j0 and j1 in: 4 at once
    release["g0"].set()
    await settle()
    assert started == ["g0", "g1", "g2"]  # g2 came first
    release["g1"].set()
    await settle()
    assert started == ["g0", "g1", "g2", "j0"]
    for name in ("g2", "j0"):
        release[name].set()
    await settle()
    release["j1"].set()
    await asyncio.gather(*tasks)
    assert slots.provider_free == {"sim": 2} and slots.lane_free == {"generate": 2, "judge": 2}


async def test_lanes_on_different_providers_overlap_at_their_own_widths() -> None:
    slots = Slots({"mutate": 2, "judge": 2}, provider_widths={"openai": 2, "anthropic": 2})
    started: list[str] = []
    gate = asyncio.Event()

    async def call(name: str, lane: str, provider: str) -> None:
        async with slots.slot(lane, provider):
            started.append(name)
            await gate.wait()

    calls = [(f"m{i}", "mutate", "openai") for i in range(3)]
    calls += [(f"j{i}", "judge", "anthropic") for i in range(3)]
    tasks = [asyncio.create_task(call(*c)) for c in calls]
    await settle()
    assert started == ["m0", "m1", "j0", "j1"]
    gate.set()
    await asyncio.gather(*tasks)
    assert slots.provider_free == {"openai": 2, "anthropic": 2}


async def test_a_full_provider_does_not_hold_up_a_call_to_another() -> None:
    """A panel: one judge's provider is full, the next judge's call goes to another."""
    slots = Slots({"judge": 3}, provider_widths={"openai": 1, "anthropic": 3})
    order: list[str] = []
    gate = asyncio.Event()

    async def call(name: str, provider: str) -> None:
        async with slots.slot("judge", provider):
            order.append(name)
            await gate.wait()

    calls = [("a0", "openai"), ("a1", "openai"), ("b0", "anthropic"), ("b1", "anthropic")]
    tasks = [asyncio.create_task(call(*c)) for c in calls]
    await settle()
    assert order == ["a0", "b0", "b1"]  # a1 waits for openai; the judge lane is full too
    gate.set()
    await asyncio.gather(*tasks)
    assert order[-1] == "a1" and slots.provider_free == {"openai": 1, "anthropic": 3}


async def test_a_cancelled_waiter_gives_its_provider_slot_back() -> None:
    slots = Slots({"judge": 2}, provider_widths={"sim": 1})
    await slots.acquire("judge", "sim")
    granted = asyncio.create_task(slots.acquire("judge", "sim"))
    await settle()
    assert not granted.done() and slots.lane_free == {"judge": 1}  # the provider binds
    slots.release("judge", "sim")  # grants it at once...
    granted.cancel()  # ...but it is cancelled before it runs: the slots come back
    await settle()
    assert granted.cancelled() and slots.provider_free == {"sim": 1}
    assert slots.lane_free == {"judge": 2} and not slots.waiting


async def test_a_slot_is_granted_at_once_while_its_lane_has_room() -> None:
    # No waiting on a waiter that never comes: each step is checked as soon as the loop settles.
    slots = Slots({"solo": 1})
    first = asyncio.create_task(slots.acquire("solo"))
    await settle()
    assert first.done()
    assert (slots.free, slots.lane_free) == (0, {"solo": 0})
    second = asyncio.create_task(slots.acquire("solo"))
    await settle()
    assert not second.done()
    slots.release("solo")
    await settle()
    assert second.done()
    slots.release("solo")
    assert (slots.free, slots.lane_free) == (1, {"solo": 1})


async def test_leaving_a_slot_gives_its_provider_slot_back() -> None:
    slots = Slots({"judge": 2}, provider_widths={"sim": 1})
    async with slots.slot("judge", "sim"):
        assert slots.provider_free == {"sim": 0}
    assert slots.provider_free == {"sim": 1}
    assert (slots.free, slots.lane_free) == (2, {"judge": 2})


def test_a_provider_of_zero_width_lanes_has_zero_width() -> None:
    assert provider_widths({"judge": 0}, {"judge": ["sim"]}) == {"sim": 0}
