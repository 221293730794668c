"""Wire replay on the worker: a recorded run's exchanges by wire key, and a call answered from them.

A run whose ``calls.replay`` names ``RUN_ID`` reads ``RUN_ID/raw-events.jsonl`` and, for a
campaign, every cell's ``RUN_ID.<12 hex>/raw-events.jsonl``, from the worker's run store and the
directories it declares in ``replay_dirs``: input names a run id, never a path, and links are
not followed. Kept: answered exchanges (status 200, sim ones included, marked ``synthetic``)
and final errors (a 4xx no retry changes); an error that was retried is not an outcome.

One key can hold several exchanges: calls with the same request in the same seed, such as the
candidates a tournament generates from one prompt. The exchange recorded at the same call key
(phase/index/attempt, the call's place in the deterministic workflow) answers; failing that the
first one recorded (cells in run-id order, then file order), so a lookup never depends on timing.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from activities.config import Settings
from activities.errors import ReplayClosedError, ReplayMissError
from activities.providers.base import CallContext
from activities.providers.http import error_for_status, is_final_status
from activities.providers.registry import ResolvedModel
from activities.providers.replay import read_recording
from workflows.model_types import CallModelInput, ModelResponse
from workflows.run_ids import check_run_id
from workflows.wire_replay import REPLAY_CLOSED_STATUS, wire_key

__all__ = ["Recorded", "WireCache", "WireCaches", "recording_files", "replayed"]

RAW_EVENTS = "raw-events.jsonl"


@dataclass(frozen=True)
class Recorded:
    """One answered exchange, without its request (the key stands for it: half the memory)."""

    call_id: str
    call_key: str
    provider_kind: str
    url: str | None
    synthetic: bool
    response: dict[str, Any]


@dataclass
class WireCache:
    files: list[Path]
    entries: dict[str, list[Recorded]] = field(default_factory=dict)
    """Answered exchanges (status 200) by key."""
    failures: dict[str, list[Recorded]] = field(default_factory=dict)
    """Final error answers (a 4xx no retry changes, see ``is_final_status``) by key: a call
    that failed so in the original fails the same way in the replay."""

    def find(
        self, keys: list[str], *, call_key: str, provider_kind: str
    ) -> tuple[int, Recorded] | None:
        """The exchange answering the first of ``keys`` that has one, and that key's index;
        an answer wins over a final error under any key (a JSON-mode request the endpoint
        refused, then its fallback that was answered, replays as the answer)."""
        for table in (self.entries, self.failures):
            for i, key in enumerate(keys):
                found = [r for r in table.get(key, ()) if r.provider_kind == provider_kind]
                if found:
                    same_place = [r for r in found if r.call_key == call_key]
                    return i, (same_place or found)[0]
        return None


def recording_files(run_id: str, settings: Settings) -> list[Path]:
    """The raw-event files of run ``run_id``, its campaign cells and its plan steps' child
    tournaments, in run-id order.

    Links are not followed (a cell directory or events file that is a symlink is skipped), so
    nothing outside a root is read, without resolving every path."""
    check_run_id(run_id)
    # <run>, a campaign's cells <run>.<12 hex>, and the child tournaments of plan steps
    # (<run or cell>.<step>.<n>): a plan's tournament calls live in its child's directory.
    own = re.compile(rf"^{re.escape(run_id)}(\.[0-9a-f]{{12}})?(\.[a-z0-9_.-]{{1,64}}\.\d+)?$")
    files: list[Path] = []
    for root in [settings.runs_dir, *settings.replay_dirs]:
        root = Path(root).resolve()
        try:
            names = sorted(
                e.name
                for e in os.scandir(root)
                if own.fullmatch(e.name) and e.is_dir(follow_symlinks=False)
            )
        except OSError:
            continue
        for name in names:
            path = root / name / RAW_EVENTS
            if path.is_file() and not path.is_symlink():
                files.append(path)
    return files


def _load(files: list[Path]) -> WireCache:
    cache = WireCache(files)
    for path in files:
        lines = read_recording(path)
        for line in lines:
            if not line.strip():
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a killed worker holds no exchange: a miss
            # Any other line that is not an exchange (not an object, a field of the wrong
            # type) holds none either: a miss, never an uncoded crash retried by Temporal.
            if not isinstance(event, dict):
                continue
            request, response = event.get("request"), event.get("response")
            body = request.get("body") if isinstance(request, dict) else None
            if not isinstance(body, dict) or not isinstance(response, dict):
                continue
            status = response.get("status")
            if not isinstance(status, int):
                continue
            if status == 200 and "body" in response:
                table = cache.entries
            elif is_final_status(status) and not event.get("replay_miss"):
                table = cache.failures
            else:
                continue  # retried in the original: its later attempt holds the outcome
            seed = event.get("seed", body.get("seed", 0))
            try:
                key = wire_key(body, int(seed) if isinstance(seed, int) else 0)
            except (TypeError, ValueError):  # e.g. "messages": 5
                continue
            table.setdefault(key, []).append(
                Recorded(
                    call_id=str(event.get("call_id", "")),
                    call_key=str(event.get("call_key", "")),
                    provider_kind=str(event.get("provider_kind", "")),
                    url=event.get("url"),
                    synthetic=bool(event.get("synthetic", False)),
                    response=response,
                )
            )
    return cache


class WireCaches:
    """The caches of the last few recorded runs a worker replayed from.

    Built on first use and rebuilt on a miss (a recording still being written, or a cell
    directory copied in since), never rescanned on a hit: a lookup then costs a dict access,
    not a walk of the run store.
    """

    KEEP = 4

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._caches: dict[str, WireCache] = {}

    def get(self, run_id: str, *, fresh: bool = False) -> WireCache:
        with self._lock:
            cached = None if fresh else self._caches.get(run_id)
        if cached is not None:
            return cached
        cache = _load(recording_files(run_id, self.settings))
        with self._lock:
            self._caches.pop(run_id, None)
            self._caches[run_id] = cache
            while len(self._caches) > self.KEEP:  # the oldest built goes first
                self._caches.pop(next(iter(self._caches)))
        return cache


async def replayed(
    caches: WireCaches, input: CallModelInput, resolved: ResolvedModel, ctx: CallContext
) -> ModelResponse:
    """Answer from the recording ``input.replay`` names (wire replay), or apply its miss
    policy. The exchange is recorded in this run's raw events as well (marked
    ``replayed_from``), so the replayed run passes the same capture check as the original."""
    assert input.replay is not None
    replay, request = input.replay, input.request
    implementation = resolved.implementation
    wire_bodies = getattr(implementation, "wire_bodies", None)
    bodies: list[dict[str, Any]] = wire_bodies(request, ctx) if wire_bodies else []
    keys = [wire_key(body, request.seed) for body in bodies]
    cache = await asyncio.to_thread(caches.get, replay.run_id)
    found = cache.find(keys, call_key=input.call_key, provider_kind=resolved.endpoint.kind)
    if found is None:  # the recording may have grown since the cache was built
        cache = await asyncio.to_thread(caches.get, replay.run_id, fresh=True)
        found = cache.find(keys, call_key=input.call_key, provider_kind=resolved.endpoint.kind)
    if found is not None:
        index, recorded = found
        ctx.fallbacks += index  # the JSON-mode fallback the original call took, if any
        await ctx.raw_events.record(
            {
                "url": recorded.url,
                "synthetic": recorded.synthetic,
                "replayed_from": recorded.call_id,
                "request": {"body": bodies[index]},
                "response": recorded.response,
            }
        )
        status = recorded.response["status"]
        if status != 200:  # the original's final error, raised as it was then
            text = recorded.response.get("text")
            if text is None:
                text = orjson.dumps(recorded.response.get("body")).decode()
            raise error_for_status(httpx.Response(status, text=text), ctx, text)
        return implementation.parse_response(recorded.response["body"], request, ctx)
    if replay.on_miss == "network":
        return await implementation.request(request, ctx)
    where = "no recorded raw events" if not cache.files else "no recorded exchange"
    message = (
        f"wire replay of run {replay.run_id!r}: {where} for call {input.call_key} "
        f"({request.model}, seed {request.seed}) with key "
        f"{keys[0] if keys else '(provider not replayable)'}: the request differs from the "
        "recording (prompt, model, parameters or seed), or set on_miss to network"
    )
    model = f"{resolved.provider_name}:{resolved.model_name}"
    miss: dict[str, Any] = {
        "url": f"replay:{replay.run_id}",
        "synthetic": True,
        "replay_miss": keys[0] if keys else None,
        "request": {"body": bodies[0] if bodies else {}},
    }
    if replay.on_miss == "throw":
        await ctx.raw_events.record({**miss, "error": f"replay miss: {message}"})
        raise ReplayMissError(message, model=model)
    body = {"error": {"type": "replay_closed", "message": message}}
    await ctx.raw_events.record(
        {**miss, "response": {"status": REPLAY_CLOSED_STATUS, "headers": {}, "body": body}}
    )
    raise ReplayClosedError(
        f"HTTP {REPLAY_CLOSED_STATUS} (fail-closed): {message}",
        model=model,
        status=REPLAY_CLOSED_STATUS,
        body=message,
    )
