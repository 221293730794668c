"""A tournament's walls with no overhead, replayed from its run directory (pure, no Temporal).

``benchmarks/pipelining.py`` prints these beside the measured walls: the calls a run made (its
``usage.jsonl``, each with the latency it saw) and what each judge call waited for (the pair in
``comparisons.jsonl``), scheduled as the workflow schedules them, every workflow task, fit and
artifact write taking no time. What is left between a measured wall and its replay is overhead;
what is left between the replayed barrier and pipelined walls is the schedule.

- barrier: each phase in turn, its calls first come first served at the phase's width;
- pipelined: a judging phase starts with the generation or mutation before it (ids are known
  first) and each judge call waits for both of its candidates; every lane has its width, and
  ``run_width`` (runs started before ``pipelined-lane-widths``) also bounds the calls in flight
  across lanes. The fit after each judging is a barrier either way. Calls are served in the
  order they became ready (ties: schedule order), as ``workflows/tournament/slots.py`` does.

One call per pair (no judge panel or both orders); a judge call's invalid-output retries run
back to back in its slot.
"""

from __future__ import annotations

import heapq
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Call", "Phase", "barrier_wall", "phases_of_run", "pipelined_wall"]


@dataclass(frozen=True)
class Call:
    seconds: float
    needs: tuple[str, ...] = ()
    """Candidate ids it judges (a judge call)."""
    makes: str | None = None
    """The candidate id it makes (a generation or mutation call)."""


@dataclass(frozen=True)
class Phase:
    name: str
    lane: str
    calls: tuple[Call, ...]


def phases_of_run(run_dir: Path) -> list[Phase]:
    """The phases of a finished run, in the order it ran them, each call with its latency."""

    def rows(name: str) -> list[dict[str, object]]:
        return [json.loads(line) for line in (run_dir / name).read_text().splitlines() if line]

    seconds: dict[tuple[str, int], float] = defaultdict(float)
    for usage in rows("usage.jsonl"):
        _run, phase, index, _attempt = str(usage["usage_id"]).rsplit("/", 3)
        seconds[phase, int(index)] += float(usage["latency_ms"]) / 1000  # type: ignore[arg-type]
    # The loop's order, not the landing order: pipelined, a judging's first call can land
    # before the first of the mutation that starts with it.
    order = sorted({phase for phase, _ in seconds}, key=_loop_order)
    pairs = {
        (str(c["phase"]), int(str(c["id"]).rsplit("#", 1)[1])): (
            str(c["presented_a"]),
            str(c["presented_b"]),
        )
        for c in rows("comparisons.jsonl")
    }
    phases = []
    for name in order:
        indices = sorted(i for phase, i in seconds if phase == name)
        if name == "initial_generation":
            calls = tuple(Call(seconds[name, i], makes=f"g0-c{i}") for i in indices)
            phases.append(Phase(name, "make", calls))
        elif name.startswith("generation_mutation:"):
            g = name.split(":")[1]
            calls = tuple(Call(seconds[name, i], makes=f"g{g}-m{i}") for i in indices)
            phases.append(Phase(name, "make", calls))
        elif "judging" in name:
            calls = tuple(Call(seconds[name, i], needs=pairs[name, i]) for i in indices)
            phases.append(Phase(name, "judge", calls))
        # anything else (the finalizer) runs after the last fit, the same either way: left out
    return phases


def _loop_order(phase: str) -> tuple[float, int]:
    name, _, generation = phase.partition(":")
    step = {"initial_generation": (0.0, 0), "generation_judging": (float(generation or 0), 0),
            "generation_mutation": (float(generation or 0), 1)}  # fmt: skip
    return step.get(name, (float("inf"), 0 if name == "final_judging" else 1))


def barrier_wall(phases: list[Phase], width: int) -> float:
    wall = 0.0
    for phase in phases:
        free = [wall] * width
        ends = []
        for call in phase.calls:
            end = heapq.heappop(free) + call.seconds
            heapq.heappush(free, end)
            ends.append(end)
        wall = max(ends, default=wall)
    return wall


def pipelined_wall(phases: list[Phase], width: int, run_width: int | None = None) -> float:
    wall = 0.0
    i = 0
    while i < len(phases):
        block = [phases[i]]  # a generation or mutation, and the judging that starts with it
        if phases[i].lane == "make" and i + 1 < len(phases) and phases[i + 1].lane == "judge":
            block.append(phases[i + 1])
        i += len(block)
        wall = _overlapped(block, wall, width, run_width)
    return wall


def _overlapped(block: list[Phase], start: float, width: int, run_width: int | None) -> float:
    calls = [(phase.lane, call) for phase in block for call in phase.calls]
    making = {call.makes for _, call in calls if call.makes}
    made: dict[str, float] = {}
    waiting = list(range(len(calls)))
    in_flight: list[tuple[float, int]] = []
    busy: dict[str, int] = defaultdict(int)
    now = end = start

    def ready_at(j: int) -> float | None:
        needs = [c for c in calls[j][1].needs if c in making]
        if any(c not in made or made[c] > now for c in needs):
            return None
        return max([start] + [made[c] for c in needs])

    while waiting or in_flight:
        while run_width is None or len(in_flight) < run_width:
            ready = [
                (at, j)
                for j in waiting
                if busy[calls[j][0]] < width and (at := ready_at(j)) is not None
            ]
            if not ready:
                break
            _, j = min(ready)
            waiting.remove(j)
            lane, call = calls[j]
            busy[lane] += 1
            heapq.heappush(in_flight, (now + call.seconds, j))
        assert in_flight, "unreachable: a waiting call's makers have no needs, so one starts"
        now, j = heapq.heappop(in_flight)
        lane, call = calls[j]
        busy[lane] -= 1
        end = max(end, now)
        if call.makes:
            made[call.makes] = now
    return end
